#!/bin/bash
# Scenario 3: our initiator (rdmablk, ibverbs provider) against the kernel's nvmet-rdma target
# (/dev/ram0, port 4421) and against rdmablkd (/dev/ram1, port 4420), over rxe0 in one guest.
# Per target: rdmablk bench 4k randread/randwrite at QD16 and QD32 (one job = one I/O queue, like
# the fio jobs), then a verify pass: 64 MiB of random data written with `rdmablk write` at 1 MiB,
# read back with `rdmablk read`, compared with cmp, and compared with the backing RAM disk itself.
# Needs /mnt/share/bin/rdmablk and /mnt/share/bin/rdmablkd. Params: lab.fiotime=S (20)
. /mnt/share/scripts/lib.sh
B=/mnt/share/bin/rdmablk; D=/mnt/share/bin/rdmablkd
OURS=nqn.2026-11.io.rdmablk:lab
KNQN=nqn.2026-11.io.rdmablk:kernel
FT=${LAB_FIOTIME:-20}
t_start=$(ts)
for f in "$B" "$D"; do [ -x "$f" ] || { fail "missing $f"; exit 1; }; done
step "network, rxe0, RAM disks"
net_up; rxe_up || exit 1
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1

step "kernel nvmet-rdma on $IP:4421 (/dev/ram0)"
run modprobe nvmet; run modprobe nvmet-rdma
C=/sys/kernel/config/nvmet
mkdir $C/subsystems/$KNQN && echo 1 > $C/subsystems/$KNQN/attr_allow_any_host
mkdir $C/subsystems/$KNQN/namespaces/1 && echo -n /dev/ram0 > $C/subsystems/$KNQN/namespaces/1/device_path
echo 1 > $C/subsystems/$KNQN/namespaces/1/enable || fail "nvmet namespace enable"
mkdir $C/ports/1
echo rdma > $C/ports/1/addr_trtype; echo ipv4 > $C/ports/1/addr_adrfam
echo "$IP" > $C/ports/1/addr_traddr; echo 4421 > $C/ports/1/addr_trsvcid
ln -s $C/subsystems/$KNQN $C/ports/1/subsystems/$KNQN || fail "nvmet port link"

step "rdmablkd on $IP:4420 (/dev/ram1)"
mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
transport: {provider: auto, max_queue_depth: 128}
listeners: [{addr: "$IP:4420"}]
volumes: [{name: ram1, path: /dev/ram1, block_size: 512}]
subsystems:
  - nqn: $OURS
    serial: rdmablklab01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram1}]
EOC
"$D" --config /tmp/rd/rdmablkd.yaml --cpuprofile "$LAB_OUT/rdmablkd-cpu.pprof" > "$LAB_OUT/rdmablkd.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do grep -qi 'listen' "$LAB_OUT/rdmablkd.log" && break; sleep 0.1; done
cat "$LAB_OUT/rdmablkd.log"
grep -q 'provider=ibverbs' "$LAB_OUT/rdmablkd.log" || fail "rdmablkd did not choose the ibverbs provider"

jnum() { awk -v k="\"$2\":" '$1==k {gsub(",","",$2); print $2; exit}' "$1"; }
# side LABEL PORT NQN RAMDISK
side() {
  local label=$1 port=$2 nqn=$3 ram=$4 rw qd f
  local R=("$B" --provider ibverbs -a "$IP" -s "$port" -n "$nqn")
  step "initiator -> $label ($nqn)"
  run "${R[@]}" discover | tee "$LAB_OUT/init-$label-discover.txt" || fail "rdmablk discover ($label)"
  run "${R[@]}" identify > "$LAB_OUT/init-$label-identify.txt" 2>&1 || fail "rdmablk identify ($label)"
  head -20 "$LAB_OUT/init-$label-identify.txt"
  for rw in read write; do
    for qd in 16 32; do
      f=$LAB_OUT/init-$label-rand$rw-qd$qd.json
      run "${R[@]}" --json bench -q --rw $rw --pattern rand --bs 4k --qd $qd --jobs 1 --runtime "${FT}s" \
        --size 768M > "$f" 2> "$f.err" || fail "rdmablk bench $label rand$rw qd$qd: $(tail -1 "$f.err")"
      result "init.$label.rand$rw.qd$qd.iops" "$(jnum "$f" iops | awk '{printf "%.0f", $1}')"
      result "init.$label.rand$rw.qd$qd.p99_us" "$(jnum "$f" lat_p99_us | awk '{printf "%.0f", $1}')"
      result "init.$label.rand$rw.qd$qd.errors" "$(jnum "$f" errors)"
    done
  done
  step "verify pass ($label): 64 MiB write, read back, cmp"
  head -c 64M /dev/urandom > /tmp/rand.bin
  local t0; t0=$(ts)
  run "${R[@]}" write --offset 1M -i /tmp/rand.bin || fail "rdmablk write ($label)"
  echo "write took $(since "$t0")s"; t0=$(ts)
  run "${R[@]}" read --offset 1M --length 64M -o /tmp/back.bin || fail "rdmablk read ($label)"
  echo "read took $(since "$t0")s"
  if cmp /tmp/rand.bin /tmp/back.bin; then result "init.$label.verify" ok; else result "init.$label.verify" MISMATCH; fail "read-back differs ($label)"; fi
  dd if="$ram" bs=1M skip=1 count=64 iflag=direct status=none of=/tmp/disk.bin
  if cmp /tmp/rand.bin /tmp/disk.bin; then result "init.$label.ondisk" ok; else result "init.$label.ondisk" MISMATCH; fail "backing disk differs ($label)"; fi
  rm -f /tmp/back.bin /tmp/disk.bin
}
side kernel 4421 "$KNQN" /dev/ram0
side ours 4420 "$OURS" /dev/ram1
kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $?"
step "dmesg"
dmesg_check
echo "scenario initiator: ${FAILS} failure(s), $(since "$t_start")s"
[ "$FAILS" = 0 ]
