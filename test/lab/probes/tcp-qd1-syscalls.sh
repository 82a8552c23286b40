#!/bin/bash
# System call and context switch census of rdmablkd's NVMe/TCP target at queue depth 1, against
# nvmet-tcp, in one lab guest over loopback.
#   test/lab/run-gobin.sh test/lab/probes/tcp-qd1-syscalls.sh
# Serves a 1 GiB memory-backed null_blk from the share's rdmablkd (the one the last run.sh built) on
# 127.0.0.1:4420, connects the kernel nvme-tcp host, and runs fio 4 KiB randread then randwrite at
# QD1 for 6 s each under `perf stat -e 'syscalls:sys_enter_*'` on rdmablkd. Divide the counts by the
# writev count (one response write per command) for system calls per command; nvmet-tcp makes none.
# Before each counted job, the same job without perf gives rdmablkd's user and system time per
# command and the guest's busy time per command (host and target share the guest here).
# 2026-12-06 (6.1 guest, that day's build): per command 3 read (the command, the read that finds the
# socket empty, the io_uring eventfd count taken after an inline reap), 2.2 clock_gettime (the TCG
# guest runs on the hpet clocksource, TSC marked unstable, so the vDSO falls back to the system
# call: 2 µs each there, a getppid 0.55 µs), 2 epoll_pwait, 1 writev, 1 io_uring_enter: about 12 µs
# of the 250-300 µs more CPU per command than nvmet-tcp that rdmablkd spends at QD1.
# After the file backend paused its eventfd around Unplug (IORING_CQ_EVENTFD_DISABLED; same day,
# a boot on the tsc clocksource, so no clock_gettime calls): per command 2 read, 1 epoll_pwait,
# 1 writev, 1 io_uring_enter — the eventfd read and the second epoll_pwait (the poller's look that
# found the eventfd's stale readiness) are gone. Commands per 6 s did not change measurably.
# Then the guest's context switches per command (SMP=1 run-gobin.sh ...: 1 vCPU as in `perf`): 5.4
# with rdmablkd vs 2.1 with nvmet-tcp; by task, the host's nvme_tcp_wq kworker 2.0 vs 1.0 (nvmet's
# io_work and the host's run in one kworker pass), rdmablkd's thread 1.1, rcu_preempt 0.73 vs 0.13
# (the RCU wake-ups are time-based, not per command: tcp-qd1-wakeups.sh counts the same number in
# both runs, and nvmet-tcp's run completes about four times as many commands). A
# context switch costs about 60 µs in this guest (pipe ping-pong 113-124 µs per round trip, threads
# and processes alike), so those extra switches are most of rdmablkd's QD1 gap here.
. /mnt/share/scripts/lib.sh
NQN=nqn.2026-11.io.rdmablk:probe
DEV=$(nullb_up 1024) || { echo "no null_blk"; exit 1; }
probe_tcp_up "$DEV" "$NQN" || exit 1
ut() { awk '{print $14, $15}' "/proc/$DPID/stat"; }
for job in randread randwrite; do
  # first without perf: rdmablkd's user and system time per command
  read -r u0 s0 < <(ut); b0=$(cpu_busy); x0=$(ctxt_count)
  fio --name=qd1 --filename="/dev/$NDEV" --direct=1 --ioengine=libaio --rw=$job --bs=4k --iodepth=1 \
    --time_based --runtime=6 --output-format=json > "/tmp/rd/fio.$job.json"
  read -r u1 s1 < <(ut); b1=$(cpu_busy); x1=$(ctxt_count)
  ios=$(python3 -c "import json; j=json.load(open('/tmp/rd/fio.$job.json'))['jobs'][0]; print(j['read']['total_ios']+j['write']['total_ios'])")
  hz=$(getconf CLK_TCK)
  echo "== $job: $ios commands in 6 s; per command: rdmablkd user $(( (u1-u0)*1000000/hz/ios )) µs, system $(( (s1-s0)*1000000/hz/ios )) µs; guest busy $(( (b1-b0)*1000000/hz/ios )) µs, context switches $(( (x1-x0)*10/ios ))/10"
  perf stat -e 'syscalls:sys_enter_*' -p "$DPID" -o "/tmp/rd/stat.$job" -- sleep 6 &
  sp=$!
  fio --name=qd1 --filename="/dev/$NDEV" --direct=1 --ioengine=libaio --rw=$job --bs=4k --iodepth=1 \
    --time_based --runtime=6 > /dev/null
  wait $sp
  echo "== $job (rdmablkd's system calls over 6 s; writev = commands)"
  grep -v '^#' "/tmp/rd/stat.$job" | awk '$1+0 > 0 {print $1, $2}' | sort -rn
done
# which tasks switch: every task's context switches over one more randread job (taskjob LABEL)
tasks() { for t in /proc/[0-9]*/task/[0-9]*; do
  printf '%s %s %s\n' "${t##*/}" "$(tr -d ' ' < "$t/comm" 2>/dev/null)" \
    "$(awk '/ctxt_switches/ {s+=$2} END {print s+0}' "$t/status" 2>/dev/null)"; done; }
taskjob() {
  tasks > /tmp/rd/tasks0
  fio --name=qd1 --filename="/dev/$NDEV" --direct=1 --ioengine=libaio --rw=randread --bs=4k --iodepth=1 \
    --time_based --runtime=6 --output-format=json > /tmp/rd/fio.tasks.json
  tasks > /tmp/rd/tasks1
  local ios; ios=$(python3 -c "import json; j=json.load(open('/tmp/rd/fio.tasks.json'))['jobs'][0]; print(j['read']['total_ios'])")
  echo "== $1 randread: context switches per command by task (top 8; fio itself is gone by the second count)"
  awk -v ios="$ios" 'NR==FNR {c[$1]=$3; next} ($1 in c) && $3 > c[$1] {printf "%.2f %s(%s)\n", ($3-c[$1])/ios, $2, $1}' \
    /tmp/rd/tasks0 /tmp/rd/tasks1 | sort -rn | head -8
}
taskjob rdmablkd
nvme disconnect -n "$NQN" > /dev/null
kill -TERM "$DPID"; wait "$DPID"
# the same jobs against nvmet-tcp on the same device: the guest's busy time per command
nvmet_up "$NQN" "$DEV" 127.0.0.1 4420 tcp || { echo "nvmet_up failed"; exit 1; }
nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$NQN" || exit 1
nvme_ndev || exit 1
for job in randread randwrite; do
  b0=$(cpu_busy); x0=$(ctxt_count)
  fio --name=qd1 --filename="/dev/$NDEV" --direct=1 --ioengine=libaio --rw=$job --bs=4k --iodepth=1 \
    --time_based --runtime=6 --output-format=json > "/tmp/rd/fio.$job.json"
  b1=$(cpu_busy); x1=$(ctxt_count)
  ios=$(python3 -c "import json; j=json.load(open('/tmp/rd/fio.$job.json'))['jobs'][0]; print(j['read']['total_ios']+j['write']['total_ios'])")
  echo "== nvmet-tcp $job: $ios commands in 6 s; guest busy $(( (b1-b0)*1000000/$(getconf CLK_TCK)/ios )) µs per command, context switches $(( (x1-x0)*10/ios ))/10"
done
taskjob nvmet-tcp
nvme disconnect -n "$NQN" > /dev/null
