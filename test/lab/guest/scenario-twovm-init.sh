#!/bin/bash
# Scenario 4, initiator VM: waits for $LAB_OUT/target.ready, then the kernel nvme-rdma host against
# rdmablkd in the other VM (lab.peer): discover, connect, fio randread/randwrite QD16 + crc32c
# verify, disconnect; then our initiator: bench randread QD16 and a 16 MiB write/read-back/cmp.
# Writes $LAB_OUT/initiator.done at the end, whatever happened.
. /mnt/share/scripts/lib.sh
P=${LAB_PEER:?lab.peer=IP}; NQN=nqn.2026-11.io.rdmablk:lab; B=/mnt/share/bin/rdmablk; FT=${LAB_FIOTIME:-15}
trap 'touch "$LAB_OUT/initiator.done"' EXIT
net_up; rxe_up || exit 1
for i in $(seq 900); do [ -e "$LAB_OUT/target.ready" ] && break; sleep 1; done
[ -e "$LAB_OUT/target.ready" ] || { fail "target VM not ready"; exit 1; }
step "target ready after ${i}s"
run ping -c 2 -W 5 "$P" || fail "ping $P"
run modprobe nvme-rdma
run nvme discover -t rdma -a "$P" -s 4420 || fail "nvme discover $P"
t0=$(ts)
if run nvme connect -t rdma -n "$NQN" -a "$P" -s 4420; then
  echo "connect took $(since "$t0")s"
  for _ in $(seq 100); do NDEV=$(ls /dev/nvme*n1 2>/dev/null | head -1); [ -b "$NDEV" ] && break; sleep 0.1; done
  run nvme list
  fio_job twovm.randread.qd16 "$NDEV" randread 16 --time_based --runtime="$FT" --size=768M
  fio_job twovm.randwrite.qd16 "$NDEV" randwrite 16 --time_based --runtime="$FT" --size=768M
  fio_job twovm.verify "$NDEV" randwrite 16 --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c \
      --do_verify=1 --verify_fatal=1 --verify_state_save=0
  run nvme disconnect -n "$NQN" || fail "nvme disconnect"
else fail "nvme connect $P"; fi
R=("$B" --provider ibverbs -a "$P" -s 4420 -n "$NQN")
f=$LAB_OUT/twovm-init-bench.json
run "${R[@]}" --json bench -q --rw read --pattern rand --bs 4k --qd 16 --jobs 1 --runtime "${FT}s" > "$f" || fail "rdmablk bench"
result twovm.init.randread.qd16.iops "$(awk '$1=="\"iops\":" {printf "%.0f", $2; exit}' "$f")"
head -c 16M /dev/urandom > /tmp/rand.bin
run "${R[@]}" write --offset 4M -i /tmp/rand.bin || fail "rdmablk write"
run "${R[@]}" read --offset 4M --length 16M -o /tmp/back.bin || fail "rdmablk read"
if cmp /tmp/rand.bin /tmp/back.bin; then result twovm.init.verify ok; else result twovm.init.verify MISMATCH; fail "read-back differs"; fi
rdma statistic show link rxe0/1
dmesg_check
[ "$FAILS" = 0 ]
