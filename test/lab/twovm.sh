#!/bin/bash
# Two guests on one virtual Ethernet segment, RoCE v2 (rxe) between two kernels. A network
# namespace made here ("rdmablk-lab") holds a bridge and two taps; VM A (PAIR-target,
# 192.168.79.2) and VM B (PAIR-init, 192.168.79.3, with lab.peer=192.168.79.2) run the guest
# scenarios scenario-PAIR-target.sh and scenario-PAIR-init.sh. Nothing leaves the namespace.
#   PAIR=twovm (default, scenario 4): rdmablkd in A; the kernel nvme-rdma host (fio) and our
#   initiator in B.   PAIR=perf, PAIR=frontends: see run.sh.
#   test/lab/twovm.sh        Env: PAIR, RUNID, FIOTIME (s, 15), SMP (per VM, 1), MEM (per VM, 2048),
#                            GUESTARGS (more lab.key=value for both VMs), TARGET_KERNEL and
#                            TARGET_INITRD (VM A's kernel and initrd when it should boot another
#                            kernel than VM B: KERNEL/INITRD, from config.sh), TARGET_EXTRA (qemu
#                            arguments for VM A only, e.g. run.sh INSNS=1's -plugin), INIT_EXTRA (VM B
#                            only), EXTRA (both)
# Writes $SHARE/out/$RUNID/lab-lock.txt: "SECONDS_WAITED_FOR_THE_LAB_LOCK LOAD1 LOAD5 LOAD15".
# Needs $SHARE/bin/rdmablkd and $SHARE/bin/rdmablk (run.sh puts them there).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/config.sh"
NS=rdmablk-lab
PAIR=${PAIR:-twovm}
export RUNID=${RUNID:-$(date +%Y%m%d-%H%M%S)-$PAIR} SMP=${SMP:-1} MEM=${MEM:-2048} NET=tap LAB_NOLOCK=1
mkdir -p "$LAB_DIR"
exec 9>"$LAB_DIR/qemu.lock"
tl=$(date +%s)
flock -n 9 || { echo "twovm.sh: another lab VM runs; waiting"; flock 9; }
OUTD=$SHARE/out/$RUNID; mkdir -p "$OUTD"; rm -f "$OUTD"/target.ready "$OUTD"/initiator.done
# how long this run waited for the lab, and the host's load when it got it (run.sh reports both)
echo "$(( $(date +%s) - tl )) $(cut -d' ' -f1-3 /proc/loadavg)" > "$OUTD/lab-lock.txt"
ip netns del $NS 2>/dev/null
ip netns add $NS || exit 125
cleanup() { kill -TERM $PA $PB 2>/dev/null; wait 2>/dev/null; ip netns del $NS 2>/dev/null; }
PA=; PB=
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
ip netns exec $NS ip link set lo up
ip netns exec $NS ip link add br0 type bridge
ip netns exec $NS ip link set br0 up
# Jumbo-capable segment: the guests' eth0 MTU (lab.mtu, default 1500) decides the frame size; a
# bridge drops frames larger than the outgoing port's MTU.
for t in tap0 tap1; do
  ip netns exec $NS ip tuntap add dev $t mode tap
  ip netns exec $NS ip link set $t mtu 9000
  ip netns exec $NS ip link set $t master br0
  ip netns exec $NS ip link set $t up
done
t0=$(date +%s)
TAP=tap0 MAC=52:54:00:00:79:02 EXTRA=${TARGET_EXTRA:-${EXTRA:-}} KERNEL=${TARGET_KERNEL:-$KERNEL} INITRD=${TARGET_INITRD:-$INITRD} ip netns exec $NS "$HERE/boot.sh" $PAIR-target lab.ip=192.168.79.2/24 \
  ${GUESTARGS:-} 9>&- &
PA=$!
TAP=tap1 MAC=52:54:00:00:79:03 EXTRA=${INIT_EXTRA:-${EXTRA:-}} ip netns exec $NS "$HERE/boot.sh" $PAIR-init lab.ip=192.168.79.3/24 \
  lab.peer=192.168.79.2 lab.fiotime="${FIOTIME:-15}" ${GUESTARGS:-} 9>&- &
PB=$!
wait $PB; rcb=$?
if [ $rcb != 0 ]; then
  # The initiator VM failed (a guest kernel panic ends it with no scenario result): the target
  # VM would otherwise serve until its lab.wait runs out, holding the lab. A minute to end on
  # its own, then it is stopped.
  for _ in $(seq 60); do kill -0 $PA 2>/dev/null || break; sleep 1; done
  if kill -0 $PA 2>/dev/null; then
    echo "twovm.sh: initiator VM failed (rc=$rcb); stopping the target VM"
    kill -TERM $PA 2>/dev/null
  fi
fi
wait $PA; rca=$?
PA=; PB=
echo "twovm.sh: initiator VM rc=$rcb, target VM rc=$rca, $(( $(date +%s) - t0 ))s"
[ $rca = 0 ] && [ $rcb = 0 ] && exit 0
[ $rcb != 0 ] && exit $rcb
exit $rca
