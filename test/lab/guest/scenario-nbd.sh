#!/bin/bash
# Scenario nbd (issue 7): our initiator as the guest's block device. rdmablkd serves /dev/ram1 over
# rxe0; `rdmablk connect` (ibverbs provider) attaches it to /dev/nbd0 through the kernel nbd driver;
# mkfs.ext4, mount, write files, unmount, disconnect, connect again, files read back intact; fio suite
# on /dev/nbd0 (same jobs as the kernel nvme-rdma host's in scenario nvmeof, so the numbers sit next
# to each other in test/lab/results), fio verify with rdmablkd SIGKILLed and restarted mid-run
# (reconnect + replay: err=0), ext4 files written across another SIGKILL of rdmablkd (e2fsck clean,
# files intact), fio ioengine=nbd through the unix socket, disconnect, dmesg clean.
# Needs /mnt/share/bin/rdmablk and /mnt/share/bin/rdmablkd (built with -tags ibverbs).
# Run: test/lab/boot.sh nbd lab.fiotime=20
. /mnt/share/scripts/lib.sh
B=/mnt/share/bin/rdmablk; D=/mnt/share/bin/rdmablkd
OURS=nqn.2026-11.io.rdmablk:lab
export RDMABLK_RUN_DIR=/run/rdmablk
t_start=$(ts)
for f in "$B" "$D"; do [ -x "$f" ] || { fail "missing $f"; exit 1; }; done
step "network, rxe0, RAM disk, nbd"
net_up; rxe_up || exit 1
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1
run modprobe nbd nbds_max=4 || exit 1

mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: auto, max_queue_depth: 128}
listeners: [{addr: "$IP:4420"}]
volumes: [{name: ram1, path: /dev/ram1, block_size: 512}]
subsystems:
  - nqn: $OURS
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram1}]
EOC
start_daemon() {
  "$D" --config /tmp/rd/rdmablkd.yaml >> "$LAB_OUT/rdmablkd.log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do [ "$(grep -c 'rdmablkd ready' "$LAB_OUT/rdmablkd.log")" -ge "$1" ] && return 0; sleep 0.1; done
  fail "rdmablkd not ready"; return 1
}
attach() {
  local t0; t0=$(ts)
  run "$B" connect --provider auto -a "$IP:4420" --nqn "$OURS" --name lab --frontend nbd --device /dev/nbd0 \
      --reconnect-delay 1s --ctrl-loss-tmo 120s || { fail "rdmablk connect"; cat "$RDMABLK_RUN_DIR/lab.log"; return 1; }
  echo "connect took $(since "$t0")s"
  run "$B" list
  for _ in $(seq 100); do [ "$(cat /sys/block/nbd0/size 2>/dev/null)" != 0 ] && break; sleep 0.1; done
  grep -q 'provider=ibverbs\|ibverbs' "$RDMABLK_RUN_DIR/lab.log" || echo "note: attachment log does not name the ibverbs provider"
}

step "rdmablkd on $IP:4420 (/dev/ram1)"
start_daemon 1 || exit 1
step "rdmablk connect -> /dev/nbd0"
attach || exit 1
step "mkfs.ext4, mount, write files"
run mkfs.ext4 -q -F /dev/nbd0 || fail "mkfs.ext4"
mkdir -p /mnt/v && run mount /dev/nbd0 /mnt/v || fail "mount"
for i in $(seq 8); do head -c $((4 << 20)) /dev/urandom > /mnt/v/f$i; done
(cd /mnt/v && sha256sum f* > /tmp/sums)
run umount /mnt/v || fail "umount"
step "disconnect, connect again, files read back"
run "$B" disconnect lab || fail "rdmablk disconnect"
echo 3 > /proc/sys/vm/drop_caches
attach || exit 1
run mount /dev/nbd0 /mnt/v || fail "mount after reconnect"
(cd /mnt/v && sha256sum -c /tmp/sums) && result nbd.files_intact yes || { result nbd.files_intact no; fail "files differ after reconnect"; }
run umount /mnt/v

step "fio on /dev/nbd0 (the jobs of the kernel host in scenario nvmeof)"
fio_suite nbd /dev/nbd0

step "fio verify on /dev/nbd0 while rdmablkd is SIGKILLed and restarted"
fio --name=nbd.restart --filename=/dev/nbd0 --rw=randwrite --bs=64k --iodepth=16 --ioengine=libaio --direct=1 \
    --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=json --output="$LAB_OUT/fio-nbd.restart.json" &
FPID=$!
sleep 3
peer_kill_begin
run kill -9 "$DPID"; wait "$DPID" 2>/dev/null
start_daemon 2
peer_kill_end rdmablkd
wait "$FPID"; rc=$?
err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-nbd.restart.json")
result nbd.restart.err "${err:-none}"
[ $rc = 0 ] && [ "$err" = 0 ] || fail "fio verify across a target restart rc=$rc err=$err"
run "$B" list

step "ext4 on /dev/nbd0: files written while rdmablkd is SIGKILLed and restarted"
target_kill9_files nbd /dev/nbd0 3

step "fio ioengine=nbd through the unix socket"
if fio --enghelp=nbd >/dev/null 2>&1; then
  fio --name=nbd.engine --ioengine=nbd --uri="nbd+unix:///lab?socket=$RDMABLK_RUN_DIR/lab.sock" --rw=randwrite \
      --bs=64k --iodepth=16 --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c --do_verify=1 --verify_fatal=1 \
      --output-format=json --output="$LAB_OUT/fio-nbd.engine.json"
  err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-nbd.engine.json")
  result nbd.engine.err "${err:-none}"
else
  echo "fio has no nbd engine here"
fi

step "disconnect"
run "$B" disconnect lab || fail "rdmablk disconnect"
kill "$DPID"; wait "$DPID"
dmesg_check
result nbd.wall_s "$(since "$t_start")"
echo "scenario nbd: ${FAILS:-0} failure(s), $(since "$t_start")s"
[ "${FAILS:-0}" = 0 ]
