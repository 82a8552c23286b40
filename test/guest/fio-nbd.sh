#!/usr/bin/env bash
# fio ioengine=nbd through our initiator's NBD export against rdmablkd, on
# this host (no kernel nbd module, no RDMA hardware: soft provider over TCP).
#
#   test/guest/fio-nbd.sh                 # verify (crc32c) + randread/randwrite/70-30 mixed
#   RESTART=1 test/guest/fio-nbd.sh       # verify while rdmablkd is SIGKILLed and restarted
#   PROFILE=pvrdma RUNTIME=20 SIZE=512m test/guest/fio-nbd.sh
#
# Needs fio with the nbd engine (Debian: apt-get install -y fio). Exits
# non-zero when any fio job reports an error.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFILE=${PROFILE:-default}
RUNTIME=${RUNTIME:-10}
SIZE=${SIZE:-256m}
VOLSIZE=${VOLSIZE:-1073741824}
PORT=${PORT:-$((20000 + RANDOM % 20000))}
RESTART=${RESTART:-0}
NQN=nqn.2026-11.io.rdmablk:fio

command -v fio >/dev/null || { echo "fio not found (apt-get install -y fio)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/rdmablk-fio.XXXXXX)
DPID= APID=
cleanup() {
	[ -n "$APID" ] && kill "$APID" 2>/dev/null && wait "$APID" 2>/dev/null || true
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "== build"
(cd "$ROOT" && go build -o "$WORK/rdmablkd" ./cmd/rdmablkd && go build -o "$WORK/rdmablk" ./cmd/rdmablk)

cat >"$WORK/rdmablkd.yaml" <<CFG
data_dir: $WORK/data
log: {level: info, format: text}
transport: {provider: soft, profile: $PROFILE}
listeners:
  - addr: 127.0.0.1:$PORT
volumes:
  - {name: vol0, path: vol0.img, size: $VOLSIZE, block_size: 512}
subsystems:
  - nqn: $NQN
    allow_any_host: true
    namespaces:
      - {nsid: 1, volume: vol0}
CFG

start_daemon() {
	"$WORK/rdmablkd" --config "$WORK/rdmablkd.yaml" >>"$WORK/rdmablkd.log" 2>&1 &
	DPID=$!
	for _ in $(seq 200); do
		grep -q "rdmablkd ready" "$WORK/rdmablkd.log" 2>/dev/null && [ "$(grep -c 'rdmablkd ready' "$WORK/rdmablkd.log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "rdmablkd did not start" >&2; cat "$WORK/rdmablkd.log" >&2; exit 1
}

echo "== rdmablkd (soft provider, profile $PROFILE) on 127.0.0.1:$PORT"
start_daemon 1

echo "== rdmablk connect (NBD export on a unix socket)"
export RDMABLK_RUN_DIR=$WORK/run
"$WORK/rdmablk" connect --foreground --provider soft --profile "$PROFILE" -a "127.0.0.1:$PORT" --nqn "$NQN" \
	--name vol0 --device none --reconnect-delay 200ms --ctrl-loss-tmo 60s >"$WORK/attach.log" 2>&1 &
APID=$!
for _ in $(seq 200); do [ -S "$WORK/run/vol0.sock" ] && [ -f "$WORK/run/vol0.json" ] && break; sleep 0.1; done
"$WORK/rdmablk" list
export NBD_URI="nbd+unix:///vol0?socket=$WORK/run/vol0.sock" RUNTIME SIZE

fail=0
run() {
	local job=$1
	echo "== fio $job"
	if fio --output="$WORK/$job.out" "$ROOT/configs/fio/$job.fio"; then :; else fail=1; fi
	grep -E "err=|IOPS=|READ:|WRITE:|verify" "$WORK/$job.out" | sed 's/^/   /'
	grep -q "err= 0" "$WORK/$job.out" || fail=1
}

if [ "$RESTART" = 1 ]; then
	echo "== fio nbd-verify while rdmablkd is SIGKILLed and restarted"
	fio --output="$WORK/nbd-verify.out" "$ROOT/configs/fio/nbd-verify.fio" &
	FPID=$!
	for i in 1 2; do
		sleep 1
		echo "   kill -9 rdmablkd (pid $DPID)"
		kill -9 "$DPID"; wait "$DPID" 2>/dev/null || true
		sleep 0.5
		start_daemon $((i + 1))
		echo "   rdmablkd restarted (pid $DPID)"
	done
	wait "$FPID" || fail=1
	grep -E "err=|IOPS=|READ:|WRITE:|verify" "$WORK/nbd-verify.out" | sed 's/^/   /'
	grep -q "err= 0" "$WORK/nbd-verify.out" || fail=1
	"$WORK/rdmablk" list
else
	run nbd-verify
	run nbd-randread
	run nbd-randwrite
	run nbd-mixed
fi

echo "== rdmablk disconnect"
"$WORK/rdmablk" disconnect vol0
wait "$APID" || true
APID=
if [ $fail = 0 ]; then echo "PASS: every fio job err=0"; else echo "FAIL (logs in $WORK kept)"; trap - EXIT; exit 1; fi
