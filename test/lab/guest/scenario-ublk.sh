#!/bin/bash
# Scenario ublk (issue 13 item 4): our initiator as the guest's block device through ublk. rdmablkd
# serves /dev/ram1 over rxe0; `rdmablk connect --frontend ublk` (ibverbs provider) makes /dev/ublkbN;
# mkfs.ext4, mount, write files, unmount, disconnect, connect again, files read back intact; fio
# suite (the jobs of scenarios nvmeof and nbd) plus 4k randread/randwrite QD32 × 2 jobs and a crc32c
# verify; fio verify while the attachment process (rdmablk connect --foreground) is SIGKILLed and
# started again: the same /dev/ublkbN recovered (UBLK_F_USER_RECOVERY), fio err=0; `rdmablk serve`
# SIGKILLed and restarted while ext4 is mounted and files are being written: device recovered,
# e2fsck clean, every file intact; fio verify, then ext4 files, across a SIGKILL and restart of
# rdmablkd (reconnect + replay: err=0, e2fsck clean, files intact); disconnect removes the device;
# dmesg clean. Needs the 6.12 guest kernel (ublk_drv; 6.1 has none).
# Needs /mnt/share/bin/rdmablk and /mnt/share/bin/rdmablkd (built with -tags ibverbs).
# Run: LAB_KERNEL=6.12 test/lab/run.sh ublk
. /mnt/share/scripts/lib.sh
B=/mnt/share/bin/rdmablk; D=/mnt/share/bin/rdmablkd
OURS=nqn.2026-11.io.rdmablk:lab
export RDMABLK_RUN_DIR=/run/rdmablk
t_start=$(ts)
for f in "$B" "$D"; do [ -x "$f" ] || { fail "missing $f"; exit 1; }; done
step "network, rxe0, RAM disk, ublk_drv (kernel $(uname -r))"
net_up; rxe_up || exit 1
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1
run modprobe ublk_drv || { fail "no ublk_drv in kernel $(uname -r) (ublk needs 6.0+: LAB_KERNEL=6.12)"; exit 1; }

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
# attach: rdmablk connect --frontend ublk; sets DEV (/dev/ublkbN, from connect's "device:" line).
attach() {
  local t0 out; t0=$(ts)
  out=$("$B" connect --provider auto -a "$IP:4420" --nqn "$OURS" --name lab --frontend ublk \
      --reconnect-delay 1s --ctrl-loss-tmo 120s 2>&1); local rc=$?
  echo "$out"
  [ $rc = 0 ] || { fail "rdmablk connect --frontend ublk"; cat "$RDMABLK_RUN_DIR/lab.log"; return 1; }
  echo "connect took $(since "$t0")s"
  DEV=$(echo "$out" | awk '$1=="device:" {print $2; exit}')
  case "$DEV" in /dev/ublkb*) ;; *) fail "connect did not report a ublk device: '$DEV'"; return 1 ;; esac
  echo "$out" | grep -q '^frontend: ublk' || fail "connect did not print the ublk frontend"
  run "$B" list
  "$B" list | grep -q "ublk *$DEV" || fail "rdmablk list does not show FRONTEND ublk DEVICE $DEV"
  for _ in $(seq 100); do [ "$(cat /sys/block/"${DEV#/dev/}"/size 2>/dev/null || echo 0)" != 0 ] && break; sleep 0.1; done
  grep -q 'ibverbs' "$RDMABLK_RUN_DIR/lab.log" || echo "note: attachment log does not name the ibverbs provider"
}

step "rdmablkd on $IP:4420 (/dev/ram1)"
start_daemon 1 || exit 1
step "rdmablk connect --frontend ublk"
attach || exit 1
result ublk.device "$DEV"
step "mkfs.ext4, mount, write files"
run mkfs.ext4 -q -F "$DEV" || fail "mkfs.ext4"
mkdir -p /mnt/v && run mount "$DEV" /mnt/v || fail "mount"
for i in $(seq 8); do head -c $((4 << 20)) /dev/urandom > /mnt/v/f$i; done
(cd /mnt/v && sha256sum f* > /tmp/sums)
run umount /mnt/v || fail "umount"
step "disconnect (the device goes), connect again, files read back"
run "$B" disconnect lab || fail "rdmablk disconnect"
for _ in $(seq 50); do [ -e "$DEV" ] || break; sleep 0.1; done
[ -e "$DEV" ] && fail "$DEV still present after disconnect"
echo 3 > /proc/sys/vm/drop_caches
attach || exit 1
run mount "$DEV" /mnt/v || fail "mount after reconnect"
(cd /mnt/v && sha256sum -c /tmp/sums) && result ublk.files_intact yes || { result ublk.files_intact no; fail "files differ after reconnect"; }
run umount /mnt/v

step "fio on $DEV (the jobs of scenarios nvmeof and nbd)"
fio_suite ublk "$DEV"
step "fio 4k QD32 × 2 jobs on $DEV"
for rw in randread randwrite; do
  fio_job "ublk.$rw.qd32j2" "$DEV" $rw 32 --numjobs=2 --group_reporting --time_based --runtime="${LAB_FIOTIME:-20}" --size=768M
done
fio_job "ublk.verify.qd32j2" "$DEV" randwrite 32 --numjobs=2 --group_reporting --offset_increment=256M \
    --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0

step "fio verify on $DEV while the attachment process is SIGKILLed and started again"
fio --name=ublk.kill9 --filename="$DEV" --rw=randwrite --bs=64k --iodepth=16 --ioengine=libaio --direct=1 \
    --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=json --output="$LAB_OUT/fio-ublk.kill9.json" &
FPID=$!
sleep 3
APID=$(sed 's/.*"pid":\([0-9]*\).*/\1/' "$RDMABLK_RUN_DIR/lab.json")
OLD=$DEV
peer_kill_begin
run kill -9 "$APID"
for _ in $(seq 100); do kill -0 "$APID" 2>/dev/null || break; sleep 0.1; done
t0=$(ts)
attach || fail "restart of the attachment"
peer_kill_end "the attachment"
echo "recovery took $(since "$t0")s"
grep -q 'recovered ublk device' "$RDMABLK_RUN_DIR/lab.log" && result ublk.kill9.recovered yes || { result ublk.kill9.recovered no; fail "the attachment did not recover the device"; }
[ "$DEV" = "$OLD" ] || fail "device changed across the restart: $OLD -> $DEV"
wait "$FPID"; rc=$?
err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-ublk.kill9.json")
result ublk.kill9.err "${err:-none}"
[ $rc = 0 ] && [ "$err" = 0 ] || fail "fio verify across kill -9 of the attachment rc=$rc err=$err"
run "$B" list

step "fio verify on $DEV while rdmablkd is SIGKILLed and restarted"
fio --name=ublk.target_kill9 --filename="$DEV" --rw=randwrite --bs=64k --iodepth=16 --ioengine=libaio --direct=1 \
    --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=json --output="$LAB_OUT/fio-ublk.target_kill9.json" &
FPID=$!
sleep 3
peer_kill_begin
run kill -9 "$DPID"; wait "$DPID" 2>/dev/null
t0=$(ts)
start_daemon 2 || exit 1
peer_kill_end rdmablkd
echo "rdmablkd restart took $(since "$t0")s"
wait "$FPID"; rc=$?
err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-ublk.target_kill9.json")
result ublk.target_kill9.err "${err:-none}"
[ $rc = 0 ] && [ "$err" = 0 ] || fail "fio verify across kill -9 of rdmablkd rc=$rc err=$err"

step "ext4 on $DEV: files written while rdmablkd is SIGKILLed and restarted"
target_kill9_files ublk "$DEV" 3
run "$B" list

step "disconnect"
run "$B" disconnect lab || fail "rdmablk disconnect"
for _ in $(seq 50); do [ -e "$DEV" ] || break; sleep 0.1; done
[ -e "$DEV" ] && fail "$DEV still present after disconnect"

step "rdmablk serve: ext4 mounted, files written while serve is SIGKILLed and restarted"
cat > /tmp/rd/attachments.yaml <<EOC
provider: auto
run_dir: $RDMABLK_RUN_DIR
attachments:
  - {name: lab, nqn: "$OURS", paths: ["$IP:4420"], frontend: ublk, reconnect_delay: 1s, ctrl_loss_tmo: 120s}
EOC
# serve_up: start rdmablk serve, wait for the attachment; sets SPID and DEV.
serve_up() {
  "$B" serve -c /tmp/rd/attachments.yaml >> "$LAB_OUT/serve.log" 2>&1 &
  SPID=$!
  for _ in $(seq 300); do
    DEV=$("$B" list 2>/dev/null | awk '$1=="lab" && $2=="ublk" {print $3}')
    case "$DEV" in /dev/ublkb*) [ "$(sed 's/.*"pid":\([0-9]*\).*/\1/' "$RDMABLK_RUN_DIR/lab.json")" = "$SPID" ] && return 0 ;; esac
    sleep 0.1
  done
  fail "rdmablk serve did not attach"; tail -20 "$LAB_OUT/serve.log"; return 1
}
if serve_up; then
  run "$B" list
  # fio above wrote over the whole device: a fresh filesystem.
  run mkfs.ext4 -q -F "$DEV" || fail "mkfs.ext4 (serve)"
  run mount "$DEV" /mnt/v || fail "mount (serve)"
  for i in $(seq 8); do head -c $((4 << 20)) /dev/urandom > /tmp/g$i; done
  (cd /tmp && sha256sum g* > /tmp/gsums)
  (for i in $(seq 8); do cp /tmp/g$i /mnt/v/g$i && sync; done) &
  WPID=$!
  sleep 2
  OLD=$DEV
  peer_kill_begin
  run kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  t0=$(ts)
  serve_up || fail "serve restart"
  peer_kill_end "rdmablk serve"
  echo "serve recovery took $(since "$t0")s"
  grep -q 'recovered ublk device' "$LAB_OUT/serve.log" && result ublk.serve_kill9.recovered yes || { result ublk.serve_kill9.recovered no; fail "serve did not recover the device"; }
  [ "$DEV" = "$OLD" ] || fail "device changed across the serve restart: $OLD -> $DEV"
  wait "$WPID" || fail "writing files across kill -9 of serve"
  run umount /mnt/v || fail "umount"
  echo 3 > /proc/sys/vm/drop_caches
  run e2fsck -fn "$DEV" || fail "e2fsck after kill -9 of serve"
  run mount "$DEV" /mnt/v || fail "mount after kill -9 of serve"
  (sed 's|  g|  /mnt/v/g|' /tmp/gsums | sha256sum -c) &&
    result ublk.serve_kill9.files_intact yes || { result ublk.serve_kill9.files_intact no; fail "files differ after kill -9 of serve"; }
  run umount /mnt/v
  run "$B" disconnect lab || fail "rdmablk disconnect (serve)"
  wait "$SPID"
  for _ in $(seq 50); do [ -e "$DEV" ] || break; sleep 0.1; done
  [ -e "$DEV" ] && fail "$DEV still present after disconnect (serve)"
fi
kill "$DPID"; wait "$DPID"
dmesg_check
result ublk.wall_s "$(since "$t_start")"
echo "scenario ublk: ${FAILS:-0} failure(s), $(since "$t_start")s"
[ "${FAILS:-0}" = 0 ]
