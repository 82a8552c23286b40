#!/bin/bash
# hostsample.sh DIR OUT: the host's own CPU over each job of a two-guest run (replperf). Until
# DIR/bench.done appears (or 3 hours pass), every 0.2 s: for each mark.LABEL.start / mark.LABEL.end
# pair guest A drops in DIR (the 9p share), /proc/stat's cpu line at both, and one line per job in
# OUT: "LABEL.host_busy_pct P" and "LABEL.host_steal_pct S" — the host's busy (user, nice, system,
# irq, softirq) and steal time as a share of all its CPUs over the job. Both guests' vCPUs, QEMU's
# own threads (the emulated NICs, the bridge between the guests) and anything else on the machine
# count: near 100 means the host had no CPU to spare, so a job's figures measure the host too.
set -u
DIR=${1:?usage: hostsample.sh DIR OUT}; OUT=${2:?usage: hostsample.sh DIR OUT}
declare -A B0 T0 S0 DONE
snap() { local c u n s i w q sq st r; read -r c u n s i w q sq st r < /proc/stat; echo "$((u + n + s + q + sq)) $((u + n + s + i + w + q + sq + st)) $st"; }
end=$((SECONDS + 10800))
while [ ! -e "$DIR/bench.done" ] && [ "$SECONDS" -lt "$end" ]; do
  for f in "$DIR"/mark.*.start; do
    [ -e "$f" ] || continue
    l=${f#"$DIR"/mark.}; l=${l%.start}
    [ -n "${DONE[$l]:-}" ] && continue
    if [ -z "${B0[$l]:-}" ]; then read -r B0[$l] T0[$l] S0[$l] <<< "$(snap)"; fi
    if [ -e "$DIR/mark.$l.end" ]; then
      read -r b t s <<< "$(snap)"
      dt=$((t - ${T0[$l]}))
      if [ "$dt" -gt 0 ]; then
        echo "$l.host_busy_pct $(( (b - ${B0[$l]}) * 100 / dt ))" >> "$OUT"
        echo "$l.host_steal_pct $(( (s - ${S0[$l]}) * 100 / dt ))" >> "$OUT"
      fi
      DONE[$l]=1
    fi
  done
  sleep 0.2
done
