#!/bin/bash
# Count guest instructions per QD1 NVMe/TCP command, rdmablkd against nvmet-tcp (issue 14's QD1 gap):
#   test/lab/probes/insncount/run.sh
# Builds the plugin and rdmablkd (-tags ibverbs, into the share as run.sh does), boots one one-vCPU
# lab guest with the plugin (EXTRA=-plugin ...) running test/lab/probes/tcp-qd1-insns.sh, and
# prints analyze.py's tables. LAB_NULLIRQ=0 in GOBIN_ENV makes null_blk complete in the submission.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LAB=$(cd "$HERE/../.." && pwd)
SRC=$(cd "$LAB/../.." && pwd)
. "$LAB/config.sh"
mkdir -p "$SHARE/bin" "$LAB_DIR"
gcc -O2 -Wall -Wextra -shared -fPIC -fvisibility=hidden -o "$LAB_DIR/insncount.so" "$HERE/insncount.c" -lpthread
(cd "$SRC" && go build -tags ibverbs -o "$SHARE/bin/rdmablkd" ./cmd/rdmablkd)
cp "$SHARE/bin/rdmablkd" "$LAB_DIR/rdmablkd.insns"
export RUNID=${RUNID:-$(date +%Y%m%d-%H%M%S)-insns}
mkdir -p "$SHARE/out/$RUNID/insn"
rc=0
SMP=1 EXTRA="-plugin $LAB_DIR/insncount.so,dir=$SHARE/out/$RUNID/insn" "$LAB/run-gobin.sh" "$LAB/probes/tcp-qd1-insns.sh" || rc=$?
[ $rc = 0 ] || { echo "insncount/run.sh: the guest script failed ($rc)" >&2; exit $rc; }
python3 "$HERE/analyze.py" --name rdmablkd --ref nvmet "$SHARE/out/$RUNID/insn" "$LAB_DIR/rdmablkd.insns" | tee "$SHARE/out/$RUNID/insns.md"
