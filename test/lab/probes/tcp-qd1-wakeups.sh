#!/bin/bash
# Who wakes whom, and why, per QD1 NVMe/TCP command: rdmablkd's target against nvmet-tcp, the kernel
# nvme-tcp host in the same lab guest over loopback.
#   [SMP=1] test/lab/run-gobin.sh test/lab/probes/tcp-qd1-wakeups.sh
# For each target, one 6 s fio 4 KiB randread at QD1 under `perf record -a -g` of sched:sched_wakeup
# (the stack is the waker's) and of kprobes on call_rcu and kvfree_call_rcu (who asks the RCU
# grace-period thread for work). Prints, per command, the wakeups by woken task and waker stack, and
# the RCU callbacks by caller stack: `perf script` text in the run's out directory (LABEL.script.txt,
# LABEL.ios), summarised on the host by test/lab/probes/wakeups-summary.py.
# 2026-12-06 (6.1 guest, 1 vCPU, perf recording both; rdmablkd 2,213 commands in 6 s, nvmet-tcp
# 20,364): per command, the host's io_work kworker is woken twice with rdmablkd (once by fio's
# submission through kblockd, once by rdmablkd's response: nvme_tcp_data_ready in rdmablkd's
# writev) and once with nvmet-tcp (fio's submission; nvmet's io_work and the host's response
# handling then run in the same kworker pass). rdmablkd's I/O thread is never woken: after its
# writev the woken kworker preempts it, and by the time it runs again the next command is already
# in the socket — on loopback it is always runnable, so this setup measures CPU per command, not
# wake-up latency. RCU grace-period wake-ups (1,275 vs 1,303 in all) and RCU callbacks (1,604 vs
# 1,637, nearly all fio's own start-up: dentries, VMAs) are the same in both runs, so the "0.73
# rcu_preempt switches per command" of tcp-qd1-syscalls.sh were time-based, not per command.
. /mnt/share/scripts/lib.sh
NQN=nqn.2026-11.io.rdmablk:probe
DEV=$(nullb_up 1024) || { echo "no null_blk"; exit 1; }
mkdir -p /tmp/rd
perf probe -q -a call_rcu 2>/dev/null; perf probe -q -a kvfree_call_rcu 2>/dev/null
EV="-e sched:sched_wakeup"
perf list 2>/dev/null | grep -q 'probe:call_rcu' && EV="$EV -e probe:call_rcu"
perf list 2>/dev/null | grep -q 'probe:kvfree_call_rcu' && EV="$EV -e probe:kvfree_call_rcu"
echo "events: $EV"
run() { # LABEL: one randread job recorded
  perf record -q -a -g $EV -o "/tmp/rd/$1.perf" -- fio --name=qd1 --filename="/dev/$NDEV" --direct=1 --ioengine=libaio \
    --rw=randread --bs=4k --iodepth=1 --time_based --runtime=6 --output-format=json > "/tmp/rd/fio.$1.json" 2>/tmp/rd/perf.$1.err
  local ios; ios=$(python3 -c "import json; j=json.load(open('/tmp/rd/fio.$1.json'))['jobs'][0]; print(j['read']['total_ios'])")
  echo "== $1: $ios commands"
  echo "$ios" > "$1.ios"
  perf script -i "/tmp/rd/$1.perf" -F comm,pid,event,trace,ip,sym > "$1.script.txt" 2>/dev/null
  echo "$(grep -c sched_wakeup "$1.script.txt") wakeups, $(grep -c 'probe:' "$1.script.txt") RCU callbacks recorded"
}
probe_tcp_up "$DEV" "$NQN" || exit 1
run rdmablkd
nvme disconnect -n "$NQN" > /dev/null
kill -TERM "$DPID"; wait "$DPID"
nvmet_up "$NQN" "$DEV" 127.0.0.1 4420 tcp || { echo "nvmet_up failed"; exit 1; }
nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$NQN" > /dev/null || exit 1
nvme_ndev || exit 1
run nvmet-tcp
nvme disconnect -n "$NQN" > /dev/null
