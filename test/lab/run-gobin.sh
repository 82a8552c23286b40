#!/bin/bash
# Run one host-built binary inside the lab guest, on a live Soft-RoCE device.
#   test/lab/run-gobin.sh <host-binary> [args...]
# The guest boots, brings up eth0 (10.0.2.15/24, slirp: nothing outside the guest is reachable),
# runs `rdma link add rxe0 type rxe netdev eth0`, then runs the binary from the 9p share with the
# given arguments in /mnt/share/out/<RUNID> (its working directory), prints its output and exit
# code, and powers off. run-gobin.sh exits with the binary's exit code (125: the guest failed).
# Environment for the binary: GOBIN_ENV="K=V K2=V2" (no spaces inside values).
# Example (the verbs contract suite under ibverbs on rxe):
#   go test -c -tags ibverbs -o /tmp/ibverbs.test ./verbs/ibverbs
#   test/lab/run-gobin.sh /tmp/ibverbs.test -test.v -test.count=1
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/config.sh"
BIN=${1:?usage: run-gobin.sh <host-binary> [args...]}; shift
[ -f "$BIN" ] || { echo "run-gobin.sh: no such file $BIN" >&2; exit 2; }
export RUNID=${RUNID:-$(date +%Y%m%d-%H%M%S)-gobin-$$}
OUTD=$SHARE/out/$RUNID
mkdir -p "$SHARE/bin" "$OUTD"
name=gobin-$$-$(basename "$BIN")
cp "$BIN" "$SHARE/bin/$name"; chmod +x "$SHARE/bin/$name"
{ printf '%s\n' "$name"; for a in "$@"; do printf '%q ' "$a"; done; echo; echo "${GOBIN_ENV:-}"; } > "$OUTD/gobin.cmd"
"$HERE/boot.sh" gobin >/dev/null 2>"$OUTD/boot.err" < /dev/null &
bpid=$!
# the guest writes its log through 9p; show it as it grows
touch "$OUTD/gobin.log"
tail -n +1 -F "$OUTD/gobin.log" 2>/dev/null & tpid=$!
wait $bpid; rc=$?
sleep 0.5; kill $tpid 2>/dev/null; wait $tpid 2>/dev/null
rm -f "$SHARE/bin/$name"
cat "$OUTD/boot.err" >&2
[ $rc = 125 ] && { echo "run-gobin.sh: guest failed; serial log: $OUTD/gobin.serial" >&2; tail -20 "$OUTD/gobin.serial" >&2; }
echo "run-gobin.sh: exit code $rc (logs in $OUTD)" >&2
exit $rc
