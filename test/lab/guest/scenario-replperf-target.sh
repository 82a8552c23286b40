#!/bin/bash
# replperf scenario, guest A (issue 16's benchmark on separate machines): rdmablkd cluster node n1
# (bootstrap; raft lab.ip:7001, API lab.ip:7421, NVMe-oF/RDMA listener lab.ip:4421 on rxe0) and the
# load: the kernel nvme-rdma host of this guest, connected to n1's own address. Guest B
# (scenario-replperf-init.sh) runs node n2 only, so a replicated write's second copy costs B's CPU,
# as a replica on another host would, while the host and the owner share A in both runs alike.
# Volumes (files in the nodes' data directories, on ext4 over a brd RAM disk — lab.datafs=tmpfs for
# the guest's tmpfs, which refuses O_DIRECT — lab.volsize each, 256M): r1 with one copy (n1), r2 with two (owner n1,
# copy n2), each in its own subsystem, written whole once; then per round (lab.rounds, 3) fio 4 KiB randwrite then randread
# at QD32 × 2 jobs (lab.fiotime s) on r1 and r2, their order alternating (r1 r2, then r2 r1). r2 is
# checked in sync (2 of 2) before and after the runs.
# Protocol (files in $LAB_OUT, shared with guest B):
#   n1.ready   n1 is up; node.token is the cluster's node token (here)
#   n2.ready   n2 joined (there)         bench.done  the runs are over (here)
#   init.done  guest B is finished (there)
# mark.LABEL.start / mark.LABEL.end   a job begins / ends (here; guest B measures n2 over it)
# RESULT lines: replperf.VOL.JOB.rROUND.{iops,ios,p50_us,p99_us,err}, replperf.VOL.JOB.rROUND.busy_j
# (this guest's busy jiffies), replperf.VOL.JOB.rROUND.proc_j (rdmablkd n1's own), replperf.order.rROUND, replperf.insync.{before,after}, replperf.hz, replperf.fiotime,
# replperf.{mtu,rxemtu} (eth0's MTU and rxe0's active MTU: lab.mtu), replperf.{datafs,pollwait,repltransport,legpath}.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; B=/mnt/share/bin/rdmablk; NQN=nqn.2026-11.io.rdmablk:replperf
ROUNDS=${LAB_ROUNDS:-3}; FT=${LAB_FIOTIME:-10}; VOLSIZE=${LAB_VOLSIZE:-256M}; W=${LAB_WAIT:-1500}
trap 'touch "$LAB_OUT/target.exit"' EXIT
net_up; rxe_up || exit 1
run modprobe nvme-rdma || exit 1
result replperf.mtu "$(cat /sys/class/net/eth0/mtu)"; result replperf.rxemtu "${rxe_mtu:-unknown}" # lab.mtu (both guests)
result replperf.fiotime "$FT"; result replperf.hz "$(getconf CLK_TCK)"; result replperf.volsize "$VOLSIZE"; result replperf.rounds "$ROUNDS"
C=/tmp/rc; FS=$(datafs_up $C/n1 1024) || { fail "data file system"; exit 1; }
result replperf.datafs "$FS"; result replperf.pollwait "${LAB_POLLWAIT:-channel}" # lab.pollwait=epoll: both nodes' transport.poll_wait
result replperf.gomaxprocs "${LAB_GOMAXPROCS:-default}" # lab.gomaxprocs=N: both nodes' GOMAXPROCS
result replperf.nenv "${LAB_NENV:-none}" # lab.nenv=K=V,K=V: both nodes' extra environment
# lab.pprof=1: both nodes run under the Go CPU profiler for the whole run (rdmablkd-n1.pprof, -n2.pprof);
# by default they run without it: its signals and stack walks cost a node CPU per I/O in proportion
# to the node's own CPU, so more for the 2-copy volume's writes than for the 1-copy volume's
result replperf.pprof "${LAB_PPROF:-off}"
result replperf.replzcmin "${LAB_REPLZCMIN:-default}" # lab.replzcmin=N: n1's cluster.replication.tcp_zero_copy_send_min (-1: copying legs)
# lab.repltransport=auto|rdma|tcp: n1's cluster.replication.transport (n2 listens on RDMA and NVMe/TCP;
# auto takes NVMe/TCP when every RDMA device is software, as rxe0 here is); the leg's path is recorded
RT=${LAB_REPLTRANSPORT:-auto}; result replperf.repltransport "$RT"
cat > $C/n1.yaml <<EOC
data_dir: $C/n1
log: {level: info}
transport: {provider: auto, poll_wait: "${LAB_POLLWAIT:-channel}"}
listeners: [{addr: "$IP:4421"}]
volumes: []
subsystems: []
cluster:
  enabled: true
  node_id: n1
  raft_bind: $IP:7001
  api_bind: $IP:7421
  bootstrap: true
  auth: {node_token_file: $C/node.token, insecure: true}
  replication: {transport: $RT${LAB_REPLZCMIN:+, tcp_zero_copy_send_min: $LAB_REPLZCMIN}}
EOC
export RDMABLK_API=$IP:7421
env ${LAB_GOMAXPROCS:+GOMAXPROCS=$LAB_GOMAXPROCS} ${LAB_NENV:+${LAB_NENV//,/ }} "$D" --config $C/n1.yaml ${LAB_PPROF:+--cpuprofile "$LAB_OUT/rdmablkd-n1.pprof"} > "$LAB_OUT/rdmablkd-n1.log" 2>&1 &
PID=$!
for _ in $(seq 1800); do grep -q 'cluster ready' "$LAB_OUT/rdmablkd-n1.log" && break; kill -0 $PID 2>/dev/null || break; sleep 0.1; done
grep -q 'cluster ready' "$LAB_OUT/rdmablkd-n1.log" || { tail -20 "$LAB_OUT/rdmablkd-n1.log"; fail "n1 not ready"; exit 1; }
grep -q 'provider=ibverbs' "$LAB_OUT/rdmablkd-n1.log" || fail "n1 did not choose ibverbs"
[ "${LAB_LEGWATCH:-0}" = 1 ] && { leg_watch n1 $PID $C/n1 4432 & } # lab.legwatch=1 (lib.sh leg_watch)
cp $C/node.token "$LAB_OUT/node.token" && touch "$LAB_OUT/n1.ready"
step "n1 up; waiting for n2"
wait_file "$LAB_OUT/n2.ready" "$W" || { fail "n2 never joined"; exit 1; }
for _ in $(seq 600); do [ "$("$B" cluster status 2>/dev/null | grep -cw true)" -ge 2 ] && break; sleep 0.5; done
run "$B" cluster status
HOSTNQN=$(cat /etc/nvme/hostnqn) || { fail "no /etc/nvme/hostnqn"; exit 1; }
run "$B" volume create r1 --size "$VOLSIZE" --node n1 || { fail "volume create r1"; exit 1; }
run "$B" volume create r2 --size "$VOLSIZE" --node n1 --replicas 2 --replica-nodes n2 || { fail "volume create r2"; exit 1; }
for v in r1 r2; do
  run "$B" subsystem create "$NQN-$v" --node n1 --host "$HOSTNQN" || fail "subsystem create $v"
  run "$B" subsystem add-ns "$NQN-$v" "$v" || fail "subsystem add-ns $v"
done
insync() { "$B" volume status r2 2>/dev/null | head -1 | grep -q "online, owner n1 .* 2 of 2 replicas in sync"; }
for _ in $(seq 600); do insync && break; sleep 0.5; done
run "$B" volume status r2
if insync; then result replperf.insync.before yes; else result replperf.insync.before no; fail "r2 not in sync before the runs"; fi
# the leg's paths to n2 ("path live" log lines, in the order the leg lists them): I/O takes the
# first live optimized one, the rest are alternates
result replperf.legpath "$(sed -n 's/.*msg="path live" replica=r2 .*addr=\([^ ]*\).*/\1/p' "$LAB_OUT/rdmablkd-n1.log" | paste -sd, -)"
declare -A DEV
for v in r1 r2; do
  before=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$')
  run nvme connect -t rdma -a "$IP" -s 4421 -n "$NQN-$v" || { fail "nvme connect $v"; exit 1; }
  for _ in $(seq 100); do
    d=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$' | grep -vxF "$before" | head -1); [ -n "$d" ] && break; nap 0.1
  done
  [ -n "$d" ] || { fail "no namespace for $v"; exit 1; }
  DEV[$v]=/dev/$d; step "$v is ${DEV[$v]}"
done
# Every block of both volumes written once first (on every copy: the file system allocates a file's
# blocks, and brd or tmpfs its pages, on first write, which would slow whichever volume runs first).
for v in r1 r2; do
  perf_fio "replperf.$v.prefill" "${DEV[$v]}" write 1m 4 1 --size="$VOLSIZE" || fail "prefill $v"
done
# job LABEL FIO-ARGS...: perf_fio with this guest's busy jiffies around it
# lab.sysprof=R: in round R, a system-wide profile of this guest around each job (lib.sh sysprof_start).
# RESULT LABEL.ctxt: this guest's context switches over the job; LABEL.threads: n1's busiest
# threads (lib.sh thread_delta). LABEL.rxe: rxe0's counters that changed over the job ("name:delta,..."; retransmissions,
# timeouts and NAKs are what to look for). LABEL.net: "TX RX IRQ", eth0's packets sent and received
# and the guest's interrupts over the job.
# lab.insns=1 (run.sh INSNS=1, which boots this guest with the insncount QEMU plugin): marks inside
# every job in $LAB_OUT/insn (lib.sh insn_window), labelled "VOL.JOB.rR", for test/lab/probes/insncount.
INSN=
if [ "${LAB_INSNS:-0}" = 1 ]; then
  INSN=$LAB_OUT/insn; mkdir -p "$INSN"; cat /proc/kallsyms > "$INSN/kallsyms"; cat "/proc/$PID/maps" > "$INSN/rdmablkd.maps"
fi
job() {
  local label=$1 b0 p0 x0 th0 c0 n0 i0 n1; shift
  x0=$(rxe_counters); th0=$(thread_snap $PID); c0=$(ctxt_count); n0=$(net_packets); i0=$(irq_count)
  [ "${LAB_SYSPROF:-0}" = "$r" ] && sysprof_start "$label"
  touch "$LAB_OUT/mark.$label.start" # guest B measures n2 over the job (scenario-replperf-init.sh)
  local ip=; [ -n "$INSN" ] && { insn_window "$INSN" "${label#replperf.}" "${1#/dev/}" "$FT"; ip=$INSN_PID; }
  b0=$(cpu_busy); p0=$(proc_cpu $PID); perf_fio "$label" "$@"
  [ -n "$ip" ] && wait "$ip"
  result "$label.busy_j" $(( FIO_END_BUSY - b0 )); result "$label.proc_j" $(( $(proc_cpu $PID) - p0 ))
  n1=$(net_packets); result "$label.net" "$(( ${n1% *} - ${n0% *} )) $(( ${n1#* } - ${n0#* } )) $(( $(irq_count) - i0 ))"
  touch "$LAB_OUT/mark.$label.end"
  sysprof_stop
  result "$label.ctxt" $((FIO_END_CTXT - c0))
  result "$label.threads" "$(thread_delta "$th0" "$(thread_snap $PID)")"
  result "$label.rxe" "$(rxe_counters | paste -d' ' - <(echo "$x0") | awk '$1 == $3 && $2 != $4 {printf "%s%s:%d", s, $1, $2 - $4; s=","}')"
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="r1 r2"; else order="r2 r1"; fi
  [ -n "${LAB_VOLS:-}" ] && order=${LAB_VOLS//,/ } # lab.vols=r2: only those (a profile of one)
  result "replperf.order.r$r" "${order// /,}"
  for v in $order; do
    step "round $r: $v"
    job "replperf.$v.rw32.r$r" "${DEV[$v]}" randwrite 4k 32 2 --time_based --runtime="$FT" --size="$VOLSIZE"
    job "replperf.$v.rr32.r$r" "${DEV[$v]}" randread 4k 32 2 --time_based --runtime="$FT" --size="$VOLSIZE"
  done
done
for v in r1 r2; do run nvme disconnect -n "$NQN-$v" || fail "nvme disconnect $v"; done
run "$B" volume status r2
if insync; then result replperf.insync.after yes; else result replperf.insync.after no; fail "r2 not in sync after the runs"; fi
grep -h -E 'fault|rebuild|resync' "$LAB_OUT/rdmablkd-n1.log" | cut -c1-300 | tail -10
touch "$LAB_OUT/bench.done"
wait_file "$LAB_OUT/init.done" "$W" || fail "guest B did not finish"
kill -TERM $PID; wait $PID; echo "n1 exit code $?"
dmesg_check
[ "$FAILS" = 0 ]
