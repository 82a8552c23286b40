#!/bin/bash
# hostsample.sh DIR OUT: the host's own CPU over each job of a two-guest run (replperf). Until
# DIR/bench.done appears (or 3 hours pass), every 0.2 s: for each mark.LABEL.start / mark.LABEL.end
# pair guest A drops in DIR (the 9p share), /proc/stat's cpu line at both, and lines per job in
# OUT: "LABEL.host_busy_pct P" and "LABEL.host_steal_pct S" — the host's busy (user, nice, system,
# irq, softirq) and steal time as a share of all its CPUs over the job. Both guests' vCPUs, QEMU's
# own threads (the emulated NICs, the bridge between the guests) and anything else on the machine
# count: near 100 means the host had no CPU to spare, so a job's figures measure the host too.
# Also per job, for each guest's vCPU thread (QEMU's TCG thread, "ALL CPUs/TCG" for a one-vCPU
# guest: boot.sh names the threads; A is
# the PAIR-target guest, B the PAIR-init one): "LABEL.vcpu_a_pct P" (the share of the job's wall time
# the thread ran on a host CPU) and "LABEL.vcpu_a_preempt N" (how often the host took the CPU from
# it while it could run, per second), the same for b. A guest counts every moment its vCPU thread
# waits for a host CPU as time of whatever it was running then, so a vcpu_a_pct below the guest's
# own busy share inflates its CPU per I/O by that much.
# PIN=1: guest A's vCPU thread alone on host CPU 0, every other thread of both QEMUs on the others
# (set at the start and at every job's start, for threads QEMU makes later): the other guest and
# QEMU's threads can no longer take guest A's CPU, as on separate machines; other host processes
# are not moved.
set -u
DIR=${1:?usage: hostsample.sh DIR OUT}; OUT=${2:?usage: hostsample.sh DIR OUT}
declare -A B0 T0 S0 DONE VA VB W0
snap() { local c u n s i w q sq st r; read -r c u n s i w q sq st r < /proc/stat; echo "$((u + n + s + q + sq)) $((u + n + s + i + w + q + sq + st)) $st"; }
# qemu_pid ROLE: the QEMU of guest ROLE (target or init) of this run
qemu_pid() {
  local p
  for p in $(pgrep -x qemu-system-x86); do
    tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -q "lab.scenario=[a-z0-9]*-$1 " && { echo "$p"; return; }
  done
}
# vcpu_tid PID: its TCG vCPU thread
vcpu_tid() {
  local t
  for t in /proc/$1/task/*; do
    case $(cat "$t/comm" 2>/dev/null) in *TCG*) echo "${t##*/}"; return ;; esac
  done
}
# tstat TID: "cpu_ticks involuntary_switches"
tstat() {
  local f=/proc/${1:-0}/stat
  [ -n "${1:-}" ] && [ -r "$f" ] || { echo "0 0"; return; }
  echo "$(awk '{print $14 + $15}' "$f" 2>/dev/null || echo 0) $(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0)"
}
HZ=$(getconf CLK_TCK)
NCPU=$(nproc)
PA= PB= TA= TB=
find_guests() {
  [ -n "$TA" ] && [ -n "$TB" ] && return
  PA=$(qemu_pid target); PB=$(qemu_pid init)
  [ -n "$PA" ] && TA=$(vcpu_tid "$PA"); [ -n "$PB" ] && TB=$(vcpu_tid "$PB")
}
pin() {
  [ "${PIN:-0}" = 1 ] && [ -n "$TA" ] && [ "$NCPU" -ge 2 ] || return 0
  local p t
  for p in $PA $PB; do
    for t in /proc/$p/task/*; do
      t=${t##*/}
      if [ "$t" = "$TA" ]; then taskset -p -c 0 "$t" > /dev/null 2>&1; else taskset -p -c 1-$((NCPU - 1)) "$t" > /dev/null 2>&1; fi
    done
  done
}
echo "pin ${PIN:-0}" >> "$OUT"
end=$((SECONDS + 10800))
while [ ! -e "$DIR/bench.done" ] && [ "$SECONDS" -lt "$end" ]; do
  if [ -z "$TA" ] || [ -z "$TB" ]; then find_guests; pin; fi
  for f in "$DIR"/mark.*.start; do
    [ -e "$f" ] || continue
    l=${f#"$DIR"/mark.}; l=${l%.start}
    [ -n "${DONE[$l]:-}" ] && continue
    if [ -z "${B0[$l]:-}" ]; then
      pin
      read -r B0[$l] T0[$l] S0[$l] <<< "$(snap)"; VA[$l]=$(tstat "$TA"); VB[$l]=$(tstat "$TB"); W0[$l]=$(date +%s%N)
    fi
    if [ -e "$DIR/mark.$l.end" ]; then
      read -r b t s <<< "$(snap)"
      dt=$((t - ${T0[$l]}))
      if [ "$dt" -gt 0 ]; then
        echo "$l.host_busy_pct $(( (b - ${B0[$l]}) * 100 / dt ))" >> "$OUT"
        echo "$l.host_steal_pct $(( (s - ${S0[$l]}) * 100 / dt ))" >> "$OUT"
      fi
      wall=$(( $(date +%s%N) - ${W0[$l]} )) # ns
      for g in a b; do
        if [ $g = a ]; then tid=$TA; read -r c0 n0 <<< "${VA[$l]}"; else tid=$TB; read -r c0 n0 <<< "${VB[$l]}"; fi
        [ -n "$tid" ] && [ "$wall" -gt 0 ] || continue
        read -r c1 n1 <<< "$(tstat "$tid")"
        echo "$l.vcpu_${g}_pct $(( (c1 - c0) * 100000000000 / HZ / wall ))" >> "$OUT"
        echo "$l.vcpu_${g}_preempt $(( (n1 - n0) * 1000000000 / wall ))" >> "$OUT"
      done
      DONE[$l]=1
    fi
  done
  sleep 0.2
done
