#!/bin/bash
# Graceful restarts under a multipath kernel host (issue 10 item 8): rdmablkd serves /dev/ram1 on two
# listeners (4420, 4421); the kernel nvme-rdma host connects both as paths of one multipath
# namespace with a 1 s keep-alive timeout (-k 1), runs a crc32c-verifying fio (randwrite then
# verify, lab.verifysize, 128M) and meanwhile rdmablkd is stopped with SIGTERM and started again
# lab.restarts times (2). Pass: fio err=0 and no I/O error in the kernel log (the host requeues and
# reconnects; it never sees a non-retryable status for I/O the daemon chose not to finish), and
# no reconnect refused with Connect Invalid Data Parameter (the keep-alive timer must not expire
# while the host is still connecting its I/O queues, item 8's second half). RESULT
# restart.recover_s.N: seconds from SIGTERM until both paths are live again.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; NQN=nqn.2026-11.io.rdmablk:restart; N=${LAB_RESTARTS:-2}
VS=${LAB_VERIFYSIZE:-128M}
net_up; rxe_up || exit 1
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1
run modprobe nvme-rdma || exit 1
echo "native multipath: $(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)"
mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: auto}
listeners: [{addr: "$IP:4420"}, {addr: "$IP:4421"}]
volumes: [{name: ram1, path: /dev/ram1, block_size: 512}]
subsystems:
  - nqn: $NQN
    serial: rdmablkrst01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram1}]
EOC
k=0
start() {
  k=$((k + 1))
  "$D" --config /tmp/rd/rdmablkd.yaml > "$LAB_OUT/rdmablkd-$k.log" 2>&1 &
  DPID=$!
  for _ in $(seq 200); do [ "$(grep -ci 'listen' "$LAB_OUT/rdmablkd-$k.log")" -ge 2 ] && break; sleep 0.1; done
  grep -i listen "$LAB_OUT/rdmablkd-$k.log"
}
start
for p in 4420 4421; do run nvme connect -t rdma -n "$NQN" -a "$IP" -s $p -k 1 -l 600 -c 1 || fail "connect path $p"; done
NDEV=
for _ in $(seq 100); do NDEV=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$' | head -1); [ -n "$NDEV" ] && break; sleep 0.1; done
[ -n "$NDEV" ] || { fail "no namespace device"; exit 1; }
NDEV=/dev/$NDEV
run nvme list-subsys "$NDEV"
paths=$(nvme list-subsys "$NDEV" 2>/dev/null | grep -c ' rdma ')
result restart.paths "$paths"
[ "$paths" = 2 ] || fail "expected 2 paths, got $paths"
DMESG_START=$(dmesg | wc -l)
fio --name=restart --filename="$NDEV" --rw=randwrite --bs=4k --iodepth=16 --ioengine=libaio --direct=1 \
    --size="$VS" --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
    --output-format=json --output="$LAB_OUT/fio-restart.json" &
FPID=$!
for i in $(seq "$N"); do
  sleep 4
  kill -0 $FPID 2>/dev/null || { fail "fio ended before restart $i"; break; }
  step "restart $i: SIGTERM rdmablkd"
  t0=$(ts)
  kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $? after $(since "$t0")s"
  tail -3 "$LAB_OUT/rdmablkd-$k.log"
  start
  for _ in $(seq 1200); do [ "$(nvme list-subsys "$NDEV" 2>/dev/null | grep -c ' live')" = 2 ] && break; sleep 0.1; done
  result restart.recover_s.$i "$(since "$t0")"
done
wait $FPID; frc=$?
err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-restart.json")
result restart.fio.err "${err:-none}"
[ $frc = 0 ] && [ "$err" = 0 ] || fail "fio rc=$frc err=$err"
ioerr=$(dmesg | tail -n +$((DMESG_START + 1)) | grep -E 'I/O error|blk_update_request|critical|Buffer I/O' )
result restart.kernel_io_errors "$(echo -n "$ioerr" | grep -c . )"
[ -z "$ioerr" ] || { echo "$ioerr"; fail "kernel logged I/O errors"; }
refused=$(dmesg | tail -n +$((DMESG_START + 1)) | grep -cE 'Connect Invalid Data Parameter|Property Set error')
result restart.reconnects_refused "$refused"
[ "$refused" = 0 ] || fail "$refused reconnect(s) refused by rdmablkd (keep-alive expired during I/O queue connects?)"
dmesg | tail -n +$((DMESG_START + 1)) | grep -iE 'nvme' | tail -40
run nvme disconnect -n "$NQN"
kill -TERM "$DPID"; wait "$DPID"
[ "$FAILS" = 0 ]
