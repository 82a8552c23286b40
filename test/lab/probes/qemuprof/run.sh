#!/bin/bash
# Where the emulator's own time goes, per fio job: runs one lab scenario under a host-wide
# `perf record` (software clock, 999 Hz, no call graphs) and splits one guest's vCPU thread's
# samples by fio job window and by what the host ran — translated guest code (the JIT), QEMU's TB
# lookups, its softmmu TLB refills, translation, the host kernel:
#   test/lab/probes/qemuprof/run.sh GUEST SCENARIO     e.g. perf-target perf-tcp, replperf-target replperf
# GUEST is the QEMU -name of the guest to split (boot.sh names them SCENARIO-target and
# SCENARIO-init; replperf's guest A is replperf-target, frontends' initiator guest frontends-init).
# The environment goes to run.sh as usual (ROUNDS, FIOTIME, NOBUILD, LABARGS, ...). Output: the
# scenario's results file as usual, and $SHARE/out/RUN-run-SCENARIO/qemuprof.md (analyze.py's
# table). perf needs kernel.perf_event_paranoid <= 0 or root; QEMU's stripped binary resolves only its
# exported functions (the rest is "qemu: [unresolved]"). For names, build the same QEMU with its
# symbols and pass it as QEMU_BIN (boot.sh); session 38 did, in about 10 minutes:
#   apt-get source qemu   (a deb-src line for the main archive; the debug-symbol archive is not reachable)
#   apt-get install ninja-build meson libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev \
#     libcap-ng-dev libattr1-dev flex bison
#   cd qemu-7.2+dfsg && ./configure --target-list=x86_64-softmmu --without-default-features \
#     --enable-plugins --enable-slirp --enable-tcg --enable-virtfs --enable-attr --enable-cap-ng \
#     --disable-werror --disable-docs --enable-fdt=system && ninja -C build qemu-system-x86_64
#   QEMU_BIN=$PWD/build/qemu-system-x86_64 test/lab/probes/qemuprof/run.sh GUEST SCENARIO
# Adds about 1 % host load.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LAB=$(cd "$HERE/../.." && pwd)
. "$LAB/config.sh"
[ $# -ge 2 ] || { echo "usage: $0 GUEST SCENARIO" >&2; exit 2; }
GUEST=$1 SCEN=$2
command -v perf >/dev/null || { echo "qemuprof: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
TMP=$(mktemp -d /var/tmp/qemuprof.XXXXXX)
perf record -a -F 999 -k CLOCK_MONOTONIC -o "$TMP/perf.data" -- sleep 7200 > "$TMP/perf.log" 2>&1 &
PP=$!
# the guests' QEMU PIDs with their -name, every 5 s (a scenario may boot more than one set)
( while :; do pgrep -a qemu-system >> "$TMP/qemu.txt"; sleep 5; done ) &
QP=$!
rc=0
"$LAB/run.sh" "$SCEN" || rc=$?
kill $QP 2>/dev/null
kill -INT $PP; wait $PP
OUT=$(ls -dt "$SHARE"/out/*-run-"$SCEN" 2>/dev/null | head -1)
PIDS=$(awk -v g="-name $GUEST," 'index($0, g) && $2 ~ /qemu-system/ {print $1}' "$TMP/qemu.txt" | sort -u | paste -sd, -)
if [ -z "$OUT" ] || [ -z "$PIDS" ]; then
  echo "qemuprof: no run directory or no QEMU named $GUEST (kept $TMP)" >&2; exit 1
fi
python3 "$HERE/analyze.py" "$TMP/perf.data" "$OUT" "$PIDS" | tee "$OUT/qemuprof.md"
rm -rf "$TMP"
exit $rc
