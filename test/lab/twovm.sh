#!/bin/bash
# Scenario 4: the target and the initiator in two guests on one virtual Ethernet segment, RoCE v2
# (rxe) between two kernels. A network namespace made here ("rdmablk-lab") holds a bridge and two
# taps; VM A (twovm-target, 192.168.79.2) runs rdmablkd, VM B (twovm-init, 192.168.79.3) runs the
# kernel nvme-rdma host (fio) and our initiator against it. Nothing leaves the namespace.
#   test/lab/twovm.sh        Env: RUNID, FIOTIME (s, 15), SMP (per VM, 1), MEM (per VM, 2048)
# Needs $SHARE/bin/rdmablkd and $SHARE/bin/rdmablk (run.sh puts them there).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/config.sh"
NS=rdmablk-lab
export RUNID=${RUNID:-$(date +%Y%m%d-%H%M%S)-twovm} SMP=${SMP:-1} MEM=${MEM:-2048} NET=tap LAB_NOLOCK=1
mkdir -p "$LAB_DIR"
exec 9>"$LAB_DIR/qemu.lock"
flock -n 9 || { echo "twovm.sh: another lab VM runs; waiting"; flock 9; }
ip netns del $NS 2>/dev/null
ip netns add $NS || exit 125
trap 'ip netns del $NS 2>/dev/null' EXIT
ip netns exec $NS ip link set lo up
ip netns exec $NS ip link add br0 type bridge
ip netns exec $NS ip link set br0 up
for t in tap0 tap1; do
  ip netns exec $NS ip tuntap add dev $t mode tap
  ip netns exec $NS ip link set $t master br0
  ip netns exec $NS ip link set $t up
done
OUTD=$SHARE/out/$RUNID; mkdir -p "$OUTD"; rm -f "$OUTD"/target.ready "$OUTD"/initiator.done
t0=$(date +%s)
TAP=tap0 MAC=52:54:00:00:79:02 ip netns exec $NS "$HERE/boot.sh" twovm-target lab.ip=192.168.79.2/24 &
PA=$!
TAP=tap1 MAC=52:54:00:00:79:03 ip netns exec $NS "$HERE/boot.sh" twovm-init lab.ip=192.168.79.3/24 \
  lab.peer=192.168.79.2 lab.fiotime="${FIOTIME:-15}" &
PB=$!
wait $PB; rcb=$?
wait $PA; rca=$?
echo "twovm.sh: initiator VM rc=$rcb, target VM rc=$rca, $(( $(date +%s) - t0 ))s"
[ $rca = 0 ] && [ $rcb = 0 ] && exit 0
[ $rcb != 0 ] && exit $rcb
exit $rca
