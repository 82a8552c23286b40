#!/bin/bash
# System call census of rdmablkd's NVMe/TCP target at queue depth 1, in one lab guest over loopback.
#   test/lab/run-gobin.sh test/lab/probes/tcp-qd1-syscalls.sh
# Serves a 1 GiB memory-backed null_blk from the share's rdmablkd (the one the last run.sh built) on
# 127.0.0.1:4420, connects the kernel nvme-tcp host, and runs fio 4 KiB randread then randwrite at
# QD1 for 6 s each under `perf stat -e 'syscalls:sys_enter_*'` on rdmablkd. Divide the counts by the
# writev count (one response write per command) for system calls per command; nvmet-tcp makes none.
# 2026-12-06 (6.1 guest, that day's build): per command 3 read (the command, the read that finds the
# socket empty, the io_uring eventfd count taken after an inline reap), 2.2 clock_gettime (the TCG
# guest runs on the hpet clocksource, TSC marked unstable, so the vDSO falls back to the system
# call: 2 µs each there, a getppid 0.55 µs), 2 epoll_pwait, 1 writev, 1 io_uring_enter: about 12 µs
# of the 250-300 µs more CPU per command than nvmet-tcp that rdmablkd spends at QD1.
. /mnt/share/scripts/lib.sh
NQN=nqn.2026-11.io.rdmablk:probe
DEV=$(nullb_up 1024) || { echo "no null_blk"; exit 1; }
mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: soft}
listeners: [{addr: "127.0.0.1:4420", transport: tcp}]
volumes: [{name: vol, path: $DEV, block_size: 512}]
subsystems:
  - nqn: $NQN
    serial: rdmablkprobe01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: vol}]
EOC
/mnt/share/bin/rdmablkd --config /tmp/rd/rdmablkd.yaml > /tmp/rd/log 2>&1 &
DPID=$!
for _ in $(seq 100); do grep -q 'rdmablkd ready' /tmp/rd/log && break; sleep 0.1; done
modprobe nvme-tcp
nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$NQN" || { cat /tmp/rd/log; exit 1; }
NDEV=
for _ in $(seq 50); do NDEV=$(ls /dev | grep -E '^nvme[0-9]+n[0-9]+$' | head -1); [ -n "$NDEV" ] && break; sleep 0.1; done
[ -n "$NDEV" ] || { echo "no namespace device"; exit 1; }
for job in randread randwrite; do
  perf stat -e 'syscalls:sys_enter_*' -p "$DPID" -o "/tmp/rd/stat.$job" -- sleep 6 &
  sp=$!
  fio --name=qd1 --filename="/dev/$NDEV" --direct=1 --ioengine=libaio --rw=$job --bs=4k --iodepth=1 \
    --time_based --runtime=6 > /dev/null
  wait $sp
  echo "== $job (rdmablkd's system calls over 6 s; writev = commands)"
  grep -v '^#' "/tmp/rd/stat.$job" | awk '$1+0 > 0 {print $1, $2}' | sort -rn
done
nvme disconnect -n "$NQN" > /dev/null
kill -TERM "$DPID"; wait "$DPID"
