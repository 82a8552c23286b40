#!/bin/bash
# replica scenario, target VM (issue 16's lab "Must show"): three rdmablkd cluster nodes in this
# guest (n1 bootstraps; raft 127.0.0.1:700N, API 127.0.0.1:742N, each its own NVMe-oF/RDMA
# listener lab.ip:442N on rxe0), a replicated volume "rep" (lab.replicas copies, 2; 128 MiB
# files under each node's data dir on tmpfs) owned by n2 with a copy on n3 (and n1 with 3
# copies), exported in subsystem $NQN to the host VM's NQN. The host VM (scenario-replica-init.sh)
# connects through n2 (owner, ANA optimized) and every copy node (ANA inaccessible) and runs fio
# crc32c verify; when it asks (kill.now), n2 gets SIGKILL. The leader (n1) fails the volume over to
# a copy node (cluster.failover grace 3 s); then, once the host's fio is done, n2 starts again and
# its copy is rebuilt. Protocol (files in $LAB_OUT, shared with the host VM):
#   host.nqn       the host VM's NQN (there)          target.ready  "IP OWNERPORT" (here)
#   kill.now       SIGKILL the owner now (there)      killed        the owner is dead (here)
#   fio.done       the host's fio finished (there)    rebuilt       n2 back, copies in sync, or
#   init.done      the host VM is finished (there)    rebuild.failed (here)
# lab.repltcp=1: each node also listens NVMe/TCP on lab.ip:443N, so the owner's legs to its copies
# take NVMe/TCP (cluster.replication.transport auto: the RDMA device is software) — the legs rdmablkd
# runs over rxe by default, zero-copy from 4 KiB; the host still connects over RDMA.
# RESULT lines: replica.target.* (timings from this guest's clock and the nodes' logs), among them
# replica.target.legs (the owner's legs' live paths, "path live" lines) and replica.target.repltcp.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; B=/mnt/share/bin/rdmablk; NQN=nqn.2026-11.io.rdmablk:replica
R=${LAB_REPLICAS:-2}; W=${LAB_WAIT:-1500}; VOLSIZE=${LAB_VOLSIZE:-128M}
trap 'touch "$LAB_OUT/target.exit"' EXIT
export RDMABLK_API=127.0.0.1:7421,127.0.0.1:7423   # n1 and n3: n2 is the one killed
net_up; rxe_up || exit 1
C=/tmp/rc; mkdir -p $C
# tcp_listener N: node N's NVMe/TCP listener entry with lab.repltcp=1, else nothing
tcp_listener() { [ "${LAB_REPLTCP:-0}" = 1 ] && printf ', {addr: "%s:443%s", transport: tcp}' "$IP" "$1"; }
result replica.target.repltcp "${LAB_REPLTCP:-0}"
# node_cfg ID N BOOTSTRAP JOIN
node_cfg() {
  mkdir -p $C/$1
  cat > $C/$1.yaml <<EOC
data_dir: $C/$1
log: {level: info}
transport: {provider: auto}
listeners: [{addr: "$IP:442$2"}$(tcp_listener $2)]
volumes: []
subsystems: []
cluster:
  enabled: true
  node_id: $1
  raft_bind: 127.0.0.1:700$2
  api_bind: 127.0.0.1:742$2
  bootstrap: $3
  join: [$4]
  auth: {node_token_file: $C/node.token}
  failover: {interval: 1s, grace: 3s}
EOC
}
node_cfg n1 1 true ""
node_cfg n2 2 false '"127.0.0.1:7421"'
node_cfg n3 3 false '"127.0.0.1:7421"'
declare -A PID
k=0
# start ID: run node ID (log $LAB_OUT/rdmablkd-ID-K.log) and wait for its "cluster ready" line
start() {
  k=$((k + 1))
  local log=$LAB_OUT/rdmablkd-$1-$k.log
  "$D" --config $C/$1.yaml > "$log" 2>&1 &
  PID[$1]=$!; LOG[$1]=$log
  for _ in $(seq 1800); do grep -q 'cluster ready' "$log" && break; kill -0 "${PID[$1]}" 2>/dev/null || break; sleep 0.1; done
  grep -E 'listening|cluster ready|provider' "$log"
  grep -q 'cluster ready' "$log" || { tail -20 "$log"; fail "node $1 not ready"; return 1; }
  grep -q 'provider=ibverbs' "$log" || fail "node $1 did not choose ibverbs"
}
declare -A LOG
# wait_host FILE: wait (lab.wait s at most) for FILE from the host VM; false if the host VM ended first
wait_host() {
  local i
  for ((i = 0; i < W * 10; i++)); do [ -e "$1" ] && return 0; [ -e "$LAB_OUT/init.done" ] && break; nap 0.1; done
  [ -e "$1" ]
}
start n1 && start n2 && start n3 || exit 1
step "three nodes up"
for _ in $(seq 600); do [ "$("$B" cluster status 2>/dev/null | grep -cw true)" -ge 3 ] && break; sleep 0.5; done
run "$B" cluster status
wait_host "$LAB_OUT/host.nqn" || { fail "no host NQN from the host VM"; exit 1; }
HOSTNQN=$(cat "$LAB_OUT/host.nqn")
case $R in 2) RN=n3 ;; 3) RN=n3,n1 ;; *) fail "lab.replicas=$R: want 2 or 3"; exit 1 ;; esac
run "$B" volume create rep --size "$VOLSIZE" --node n2 --replicas "$R" --replica-nodes "$RN" || { fail "volume create"; exit 1; }
run "$B" subsystem create "$NQN" --node n2 --host "$HOSTNQN" || fail "subsystem create"
run "$B" subsystem add-ns "$NQN" rep || fail "subsystem add-ns"
insync() { "$B" volume status rep 2>/dev/null | head -1 | grep -q "online, owner $1 .* $R of $R replicas in sync"; }
for _ in $(seq 600); do insync n2 && break; sleep 0.5; done
run "$B" volume status rep | tee "$LAB_OUT/volume-status-before.txt"
insync n2 || { fail "volume rep not online with $R copies in sync"; exit 1; }
# the owner's legs to its copies ("path live" log lines in the order the leg lists its paths, the one
# I/O takes first: RDMA addresses, or tcp:// ones)
result replica.target.legs "$(sed -n 's/.*msg="path live" replica=rep .*addr=\([^ ]*\).*/\1/p' "${LOG[n2]}" | awk '!seen[$0]++' | paste -sd, -)"
echo "$IP 4422" > "$LAB_OUT/target.ready"; step "target ready"

wait_host "$LAB_OUT/kill.now" || { fail "the host VM never asked for the kill"; exit 1; }
step "SIGKILL n2 (owner, pid ${PID[n2]})"
tk=$(date +%s.%N); uk=$(ts)
kill -KILL "${PID[n2]}"; wait "${PID[n2]}" 2>/dev/null
echo "$uk" > "$LAB_OUT/killed"
# the catalogue's view: poll until the owner is not n2 any more
for _ in $(seq 600); do "$B" volume status rep 2>/dev/null | head -1 | grep -q 'owner n2 ' || break; sleep 0.2; done
result replica.target.owner_moved_poll_s "$(since "$uk")"
run "$B" volume status rep | tee "$LAB_OUT/volume-status-after-kill.txt"
newowner=$(grep '^volume rep:' "$LAB_OUT/volume-status-after-kill.txt" | sed -n 's/.*, owner \([^ ]*\) .*/\1/p')
result replica.target.new_owner "${newowner:-none}"
case $newowner in n1|n3) ;; *) fail "volume owner after the kill: ${newowner:-none}, want a copy node"; newowner=n3 ;; esac
# timings from the nodes' logs (slog text: time=RFC3339 first): the leader's failover record and
# the new owner's ANA state set to optimized (1) for the export subsystem
logtime() { # PATTERN FILE...: seconds (epoch) of the first matching line after the kill
  local t pat=$1; shift
  while read -r line; do
    t=${line#time=}; t=${t%% *}
    t=$(date -d "$t" +%s.%N 2>/dev/null) || continue
    awk -v a="$t" -v b="$tk" 'BEGIN{exit !(a >= b)}' && { echo "$t"; return 0; }
  done < <(grep -h -E "$pat" "$@" | sort)
  return 1
}
for _ in $(seq 100); do grep -q "ANA state set.*nqn=$NQN port=.*state=1" "${LOG[$newowner]}" && break; sleep 0.2; done
if t=$(logtime 'volume failed over' "${LOG[n1]}" "${LOG[n3]}"); then
  result replica.target.kill_to_failover_commit_s "$(awk -v a="$t" -v b="$tk" 'BEGIN{printf "%.2f", a-b}')"
else result replica.target.kill_to_failover_commit_s none; fi
if t=$(logtime "ANA state set.*nqn=$NQN port=.*state=1" "${LOG[$newowner]}"); then
  result replica.target.kill_to_ana_optimized_s "$(awk -v a="$t" -v b="$tk" 'BEGIN{printf "%.2f", a-b}')"
else result replica.target.kill_to_ana_optimized_s none; fail "$newowner never set $NQN optimized"; fi
grep -h -E 'failed over|ANA state set|fault|epoch|rebuild|resync' "${LOG[n1]}" "${LOG[n3]}" | cut -c1-300 | tail -30

wait_host "$LAB_OUT/fio.done" || fail "the host's fio never finished"
step "n2 starts again: its copy is rebuilt"
t0=$(ts)
start n2
for _ in $(seq 1200); do insync "$newowner" && break; sleep 0.5; done
run "$B" volume status rep | tee "$LAB_OUT/volume-status-after-rebuild.txt"
if insync "$newowner"; then
  result replica.target.rebuild_s "$(since "$t0")"; touch "$LAB_OUT/rebuilt"
else
  result replica.target.rebuild_s none; fail "n2's copy not back in sync"; touch "$LAB_OUT/rebuild.failed"
fi
grep -h -E 'rebuil|in.sync|resync|path connect' "${LOG[n2]}" "${LOG[$newowner]}" | cut -c1-300 | tail -12
# the copies, compared (the files under each node's volume directory): one distinct checksum
files=$(find $C/n*/cluster/volumes -type f 2>/dev/null | sort)
md5sum $files | tee "$LAB_OUT/copies.md5"
result replica.target.copies "$(echo "$files" | grep -c .)"
result replica.target.copies_distinct "$(awk '{print $1}' "$LAB_OUT/copies.md5" | sort -u | wc -l)"
[ "$(awk '{print $1}' "$LAB_OUT/copies.md5" | sort -u | wc -l)" = 1 ] || fail "the copies differ"

wait_file "$LAB_OUT/init.done" "$W" || fail "the host VM did not finish"
for n in n3 n2 n1; do kill -TERM "${PID[$n]}" 2>/dev/null; wait "${PID[$n]}" 2>/dev/null; echo "$n exit code $?"; done
dmesg_check
[ "$FAILS" = 0 ]
