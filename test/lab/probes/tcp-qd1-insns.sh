#!/bin/bash
# Guest instructions per QD1 NVMe/TCP command: rdmablkd against nvmet-tcp, counted by the insncount
# QEMU plugin (test/lab/probes/insncount), in one one-vCPU lab guest over loopback. TCG's time per
# instruction depends on what ran before (its software TLB, its jump cache), so time alone cannot
# say whether rdmablkd's system calls do more work than nvmet's kworker or the same work slower;
# instruction counts can. Run it with test/lab/probes/insncount/run.sh (which boots the guest with
# the plugin and analyses the dumps); the script alone only makes the marks.
# Both targets serve their own memory-backed null_blk at once (rdmablkd on 127.0.0.1:4420, nvmet-tcp
# on 4421), the kernel nvme-tcp host is connected to both, and fio 4 KiB QD1 jobs alternate between
# them (A B A B per job). Each counted window lies inside a running fio job (3 s after its start, 8 s
# long), so fio's start and exit are not in it; the commands in a window come from the namespace's
# /sys/block/*/stat taken at each mark.
. /mnt/share/scripts/lib.sh
M=$PWD/insn
mkdir -p "$M"
NQN=nqn.2026-11.io.rdmablk:probe
KNQN=nqn.2026-11.io.rdmablk:probe-nvmet
DEV=$(nullb_up 512) || { echo "no null_blk"; exit 1; }
n1=/sys/kernel/config/nullb/nullb1
mkdir "$n1" && echo 512 > "$n1/size" && echo 1 > "$n1/memory_backed" && echo 512 > "$n1/blocksize" &&
  { [ -z "${LAB_NULLIRQ:-}" ] || echo "$LAB_NULLIRQ" > "$n1/irqmode"; } && echo 1 > "$n1/power" || { echo "no nullb1"; exit 1; }
for _ in $(seq 50); do [ -b /dev/nullb1 ] && break; sleep 0.1; done
probe_tcp_up "$DEV" "$NQN" || exit 1
OURS=$NDEV
nvmet_up "$KNQN" /dev/nullb1 127.0.0.1 4421 tcp || { echo "nvmet_up failed"; exit 1; }
nvme connect -t tcp -a 127.0.0.1 -s 4421 -n "$KNQN" > /dev/null || exit 1
KDEV=
for _ in $(seq 50); do
  KDEV=$(ls /dev | grep -E '^nvme[0-9]+n[0-9]+$' | grep -vx "$OURS" | head -1); [ -n "$KDEV" ] && break; sleep 0.1
done
[ -n "$KDEV" ] || { echo "no nvmet namespace device"; exit 1; }
echo "rdmablkd: /dev/$OURS, nvmet-tcp: /dev/$KDEV"
cat /proc/kallsyms > "$M/kallsyms"
cat "/proc/$DPID/maps" > "$M/rdmablkd.maps"
echo "$DPID" > "$M/rdmablkd.pid"
# mark LABEL DEV: a mark with the device's I/O count (lib.sh insn_mark, dev_ios).
mark() { insn_mark "$M" "$1" "$(dev_ios "$2")"; }
# window LABEL DEV JOB
window() {
  fio --name=qd1 --filename="/dev/$2" --direct=1 --ioengine=libaio --rw="$3" --bs=4k --iodepth=1 \
    --time_based --runtime=14 --output-format=json > "$M/fio.$1.json" &
  local fp=$!
  nap 3; mark "$1 start" "$2"; nap 8; mark "$1 end" "$2"
  wait $fp
}
for job in randread randwrite; do
  for r in 1 2; do
    window "rdmablkd.$job.$r" "$OURS" "$job"
    window "nvmet.$job.$r" "$KDEV" "$job"
  done
done
nvme disconnect -n "$NQN" > /dev/null; nvme disconnect -n "$KNQN" > /dev/null
kill -TERM "$DPID"; wait "$DPID"
nvmet_down "$KNQN"
echo "done: $INSN_K marks"
