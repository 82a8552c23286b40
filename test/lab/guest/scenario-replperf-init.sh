#!/bin/bash
# replperf scenario, guest B: rdmablkd cluster node n2 (joins n1 at lab.peer:7421; raft lab.ip:7002,
# API lab.ip:7422, NVMe-oF/RDMA listener lab.ip:4422 on rxe0 and an NVMe/TCP one on lab.ip:4432),
# which holds r2's second copy. Nothing
# else runs here: the replica's work has this guest's CPU to itself (see
# scenario-replperf-target.sh). RESULT lines: replperf.n2.busy_j (this guest's busy jiffies from
# n2's start to the end of the runs), replperf.n2.proc_j (n2's own), and per job of guest A
# LABEL.n2_busy_j, LABEL.n2_proc_j, LABEL.n2_threads.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; P=${LAB_PEER:?lab.peer=IP}; W=${LAB_WAIT:-1500}
trap 'touch "$LAB_OUT/init.done"' EXIT
net_up; rxe_up || exit 1
wait_file "$LAB_OUT/n1.ready" "$W" || { fail "n1 never came up"; exit 1; }
C=/tmp/rc; FS=$(datafs_up $C/n2 768) || { fail "data file system"; exit 1; }
result replperf.n2.datafs "$FS"
install -m 0600 "$LAB_OUT/node.token" $C/node.token || exit 1
# n2 serves NVMe/TCP too (lab.ip:4432), as a node serving both kinds of host would: which one n1's
# leg takes is cluster.replication.transport's choice (lab.repltransport)
TCPL=", {addr: \"$IP:4432\", transport: tcp}"
cat > $C/n2.yaml <<EOC
data_dir: $C/n2
log: {level: info}
transport: {provider: auto, poll_wait: "${LAB_POLLWAIT:-channel}"}
listeners: [{addr: "$IP:4422"}${TCPL}]
volumes: []
subsystems: []
cluster:
  enabled: true
  node_id: n2
  raft_bind: $IP:7002
  api_bind: $IP:7422
  join: ["$P:7421"]
  auth: {node_token_file: $C/node.token, insecure: true}
EOC
b0=$(cpu_busy)
env ${LAB_GOMAXPROCS:+GOMAXPROCS=$LAB_GOMAXPROCS} ${LAB_NENV:+${LAB_NENV//,/ }} "$D" --config $C/n2.yaml ${LAB_PPROF:+--cpuprofile "$LAB_OUT/rdmablkd-n2.pprof"} > "$LAB_OUT/rdmablkd-n2.log" 2>&1 &
PID=$!
for _ in $(seq 1800); do grep -q 'cluster ready' "$LAB_OUT/rdmablkd-n2.log" && break; kill -0 $PID 2>/dev/null || break; sleep 0.1; done
grep -q 'cluster ready' "$LAB_OUT/rdmablkd-n2.log" || { tail -20 "$LAB_OUT/rdmablkd-n2.log"; fail "n2 not ready"; exit 1; }
grep -q 'provider=ibverbs' "$LAB_OUT/rdmablkd-n2.log" || fail "n2 did not choose ibverbs"
touch "$LAB_OUT/n2.ready"; step "n2 joined"
[ "${LAB_LEGWATCH:-0}" = 1 ] && { leg_watch n2 $PID $C/n2 4432 & } # lab.legwatch=1 (lib.sh leg_watch)
# Guest B's own CPU over each of guest A's jobs (its mark files, polled every 0.2 s: the windows are
# the job's within that): LABEL.n2_busy_j, LABEL.n2_proc_j, LABEL.n2_threads.
declare -A MB MP MT
# No fork per poll (a fork+exec costs tens of ms of this guest's CPU under TCG): SECONDS, nap.
end=$(( SECONDS + W ))
while [ ! -e "$LAB_OUT/bench.done" ] && [ "$SECONDS" -lt "$end" ]; do
  for f in "$LAB_OUT"/mark.*.start; do
    [ -e "$f" ] || continue
    l=${f#"$LAB_OUT"/mark.}; l=${l%.start}
    if [ -z "${MB[$l]:-}" ]; then MB[$l]=$(cpu_busy); MP[$l]=$(proc_cpu $PID); MT[$l]=$(thread_snap $PID); fi
    if [ "${MB[$l]}" != done ] && [ -e "$LAB_OUT/mark.$l.end" ]; then
      result "$l.n2_busy_j" $(( $(cpu_busy) - ${MB[$l]} )); result "$l.n2_proc_j" $(( $(proc_cpu $PID) - ${MP[$l]} ))
      result "$l.n2_threads" "$(thread_delta "${MT[$l]}" "$(thread_snap $PID)")"
      MB[$l]=done
    fi
  done
  nap 0.2
done
[ -e "$LAB_OUT/bench.done" ] || fail "the runs never ended"
result replperf.n2.busy_j $(( $(cpu_busy) - b0 ))
result replperf.n2.proc_j "$(proc_cpu $PID)"
result replperf.n2.rxe "$(rxe_counters | awk '$2 != 0 {printf "%s%s:%d", s, $1, $2; s=","}')"
kill -TERM $PID; wait $PID; echo "n2 exit code $?"
dmesg_check
[ "$FAILS" = 0 ]
