#!/bin/bash
# Scenarios 1 and 2 (one boot): the kernel's nvme-rdma host against rdmablkd, then against the
# kernel's nvmet-rdma target, over rxe0 on eth0, both serving a 1 GiB brd RAM disk (/dev/ram1 for
# rdmablkd, /dev/ram0 for nvmet) so the backing store is the same kind.
# For rdmablkd: nvme discover, connect, list, id-ctrl, fio (fio_suite), disconnect, connect again,
# verify-only read-back of what was written before the reconnect, disconnect. Then the same fio
# suite against nvmet. dmesg must stay clean. Needs /mnt/share/bin/rdmablkd.
# Params: lab.fiotime=S (20), lab.verifysize=SIZE (128M; run.sh passes VERIFYSIZE), lab.only=ours|kernel (both),
#   lab.sendinv=on,off,on2,... (none): after scenario 1, for each value start rdmablkd again with
#   transport.send_with_invalidate true/false and run the randread/randwrite fio jobs as
#   ours_inv_VALUE.*, with rxe0 counters saved before and after each job (rxe-LABEL.txt).
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd
OURS=nqn.2026-11.io.rdmablk:lab
KNQN=nqn.2026-11.io.rdmablk:kernel
ONLY=${LAB_ONLY:-both}
t_start=$(ts)
step "network and rxe0"
net_up; rxe_up || exit 1
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1
run modprobe nvme-rdma || exit 1
connect() { # NQN PORT: nvme connect, then wait for the new /dev/nvmeXnY (sets NDEV)
  local t0 before; t0=$(ts); before=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$')
  run nvme connect -t rdma -n "$1" -a "$IP" -s "$2" || return 1
  echo "connect took $(since "$t0")s"
  NDEV=
  for _ in $(seq 100); do
    NDEV=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$' | grep -vxF "$before" | head -1)
    [ -n "$NDEV" ] && break; sleep 0.1
  done
  [ -n "$NDEV" ] || { fail "no block device for $1"; run nvme list; return 1; }
  NDEV=/dev/$NDEV; echo "block device $NDEV"
}

mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: auto, max_queue_depth: 128}
listeners: [{addr: "$IP:4420"}]
volumes: [{name: ram1, path: /dev/ram1, block_size: 512}]
subsystems:
  - nqn: $OURS
    serial: rdmablklab01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram1}]
EOC
if [ "$ONLY" != kernel ]; then
  step "scenario 1: rdmablkd on $IP:4420 (/dev/ram1)"
  [ -x "$D" ] || { fail "missing $D"; exit 1; }
  "$D" --config /tmp/rd/rdmablkd.yaml --cpuprofile "$LAB_OUT/rdmablkd-cpu.pprof" > "$LAB_OUT/rdmablkd.log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do grep -q -i 'listen' "$LAB_OUT/rdmablkd.log" && break; sleep 0.1; done
  cat "$LAB_OUT/rdmablkd.log"
  grep -q 'provider=ibverbs' "$LAB_OUT/rdmablkd.log" || fail "rdmablkd did not choose the ibverbs provider"
  run nvme discover -t rdma -a "$IP" -s 4420 | tee "$LAB_OUT/ours-discover.txt" || fail "nvme discover (ours)"
  grep -q "$OURS" "$LAB_OUT/ours-discover.txt" || fail "discovery log lacks $OURS"
  if connect "$OURS" 4420; then
    run nvme list
    nvme id-ctrl "$NDEV" > "$LAB_OUT/ours-id-ctrl.txt" 2>&1 || fail "nvme id-ctrl"
    nvme id-ns "$NDEV" > "$LAB_OUT/ours-id-ns.txt" 2>&1 || fail "nvme id-ns"
    # what nvme-cli users look at: keep-alive timer, number of queues, logs, NS descriptors
    for f in 0x0f 0x07 0x0b; do nvme get-feature "$NDEV" -f $f || fail "nvme get-feature $f"; done > "$LAB_OUT/ours-features.txt" 2>&1
    nvme smart-log "$NDEV" > "$LAB_OUT/ours-smart-log.txt" 2>&1 || fail "nvme smart-log"
    nvme error-log "$NDEV" -e 1 > "$LAB_OUT/ours-error-log.txt" 2>&1 || fail "nvme error-log"
    nvme ns-descs "$NDEV" > "$LAB_OUT/ours-ns-descs.txt" 2>&1 || fail "nvme ns-descs"
    cat "$LAB_OUT/ours-features.txt" "$LAB_OUT/ours-ns-descs.txt"
    grep -E '^(vid|sn|mn|fr|mdts|cntlid|ver|kas|sqes|cqes|nn|sgls|subnqn|ioccsz|iorcsz|msdbd)\b' "$LAB_OUT/ours-id-ctrl.txt"
    fio_suite ours "$NDEV"
    step "disconnect, reconnect, verify-only read-back"
    run nvme disconnect -n "$OURS" || fail "nvme disconnect (ours)"
    if connect "$OURS" 4420; then
      fio_job ours.reverify "$NDEV" randwrite 16 --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c \
        --verify_only --verify_state_save=0
      run nvme disconnect -n "$OURS" || fail "second nvme disconnect (ours)"
    else fail "reconnect to rdmablkd"; fi
  else fail "nvme connect to rdmablkd"; nvme disconnect -n "$OURS"; fi
  kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $?"
  tail -5 "$LAB_OUT/rdmablkd.log"
fi

# rxe_diff LABEL CMD...: run CMD; save the rxe0 hw counters that moved during it to rxe-LABEL.txt
rxe_diff() {
  local l=$1 c=/sys/class/infiniband/rxe0/ports/1/hw_counters; shift
  for f in "$c"/*; do echo "$(basename "$f") $(cat "$f")"; done > /tmp/rxe-before
  "$@"; local rc=$?
  for f in "$c"/*; do echo "$(basename "$f") $(cat "$f")"; done |
    awk 'NR==FNR {b[$1]=$2; next} $2 != b[$1] {print $1, $2 - b[$1]}' /tmp/rxe-before - > "$LAB_OUT/rxe-$l.txt"
  echo "rxe0 counters during $l:"; cat "$LAB_OUT/rxe-$l.txt"
  return $rc
}
for v in ${LAB_SENDINV//,/ }; do
  case $v in on*) b=true ;; off*) b=false ;; *) fail "lab.sendinv value $v (on|off, optionally with a digit: on2)"; continue ;; esac
  step "scenario 1 variant: rdmablkd with send_with_invalidate: $b"
  sed "s/^transport: {/transport: {send_with_invalidate: $b, /" /tmp/rd/rdmablkd.yaml > /tmp/rd/inv.yaml
  grep transport /tmp/rd/inv.yaml
  "$D" --config /tmp/rd/inv.yaml --cpuprofile "$LAB_OUT/rdmablkd-inv-$v.pprof" > "$LAB_OUT/rdmablkd-inv-$v.log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do grep -q -i 'listen' "$LAB_OUT/rdmablkd-inv-$v.log" && break; sleep 0.1; done
  if connect "$OURS" 4420; then
    for rw in randread randwrite; do
      for qd in 16 32; do
        rxe_diff "inv_$v.$rw.qd$qd" fio_job "ours_inv_$v.$rw.qd$qd" "$NDEV" $rw $qd --time_based --runtime="${LAB_FIOTIME:-20}" --size=768M
      done
    done
    run nvme disconnect -n "$OURS" || fail "nvme disconnect (inv $v)"
  else fail "nvme connect to rdmablkd (inv $v)"; fi
  kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $?"
done

if [ "$ONLY" != ours ]; then
  step "scenario 2: kernel nvmet-rdma on $IP:4421 (/dev/ram0)"
  run modprobe nvmet; run modprobe nvmet-rdma
  C=/sys/kernel/config/nvmet
  mkdir $C/subsystems/$KNQN && echo 1 > $C/subsystems/$KNQN/attr_allow_any_host
  mkdir $C/subsystems/$KNQN/namespaces/1 && echo -n /dev/ram0 > $C/subsystems/$KNQN/namespaces/1/device_path
  echo 1 > $C/subsystems/$KNQN/namespaces/1/enable || fail "nvmet namespace enable"
  mkdir $C/ports/1
  echo rdma > $C/ports/1/addr_trtype; echo ipv4 > $C/ports/1/addr_adrfam
  echo "$IP" > $C/ports/1/addr_traddr; echo 4421 > $C/ports/1/addr_trsvcid
  ln -s $C/subsystems/$KNQN $C/ports/1/subsystems/$KNQN || fail "nvmet port link"
  if connect "$KNQN" 4421; then
    nvme id-ctrl "$NDEV" > "$LAB_OUT/kernel-id-ctrl.txt" 2>&1
    rxe_diff kernel.suite fio_suite kernel "$NDEV"
    run nvme disconnect -n "$KNQN" || fail "nvme disconnect (kernel)"
  else fail "nvme connect to nvmet"; nvme disconnect -n "$KNQN"; fi
  rm $C/ports/1/subsystems/$KNQN; rmdir $C/ports/1
  echo 0 > $C/subsystems/$KNQN/namespaces/1/enable; rmdir $C/subsystems/$KNQN/namespaces/1 $C/subsystems/$KNQN
fi
step "dmesg"
dmesg_check
dmesg | grep -iE 'nvme|rxe|rdma' | tail -30
rdma statistic show link rxe0/1 > "$LAB_OUT/rxe-counters.txt" 2>&1
echo "scenario nvmeof: ${FAILS} failure(s), $(since "$t_start")s"
[ "$FAILS" = 0 ]
