#!/bin/bash
# replica scenario, host VM: the kernel nvme-rdma host with native NVMe multipath against the
# replicated volume the target VM's three-node rdmablkd cluster exports (scenario-replica-target.sh
# has the protocol). Connects a path to the owner n2 (lab.peer:4422, ANA optimized) and one to
# every other port discovery lists for the subsystem (the copy nodes, inaccessible), starts fio randwrite 4 KiB QD16 + crc32c verify over
# lab.verifysize (64M) on the multipath device, asks for the SIGKILL of n2 after lab.killafter s
# (8), and records: every change of the paths' controller and ANA states (sysfs, sampled every
# 0.2 s), fio's result, the longest interval without completed I/O (fio's IOPS log, 250 ms
# windows), the kernel's log lines about the paths, `nvme list-subsys` before and after. After
# n2 returned and its copy was rebuilt: list-subsys again and a verify-only read-back.
. /mnt/share/scripts/lib.sh
P=${LAB_PEER:?lab.peer=IP}; NQN=nqn.2026-11.io.rdmablk:replica; W=${LAB_WAIT:-1500}
VS=${LAB_VERIFYSIZE:-64M}; KA=${LAB_KILLAFTER:-8}
trap 'touch "$LAB_OUT/sampler.stop" "$LAB_OUT/init.done"' EXIT
net_up; rxe_up || exit 1
run modprobe nvme-rdma || exit 1
mp=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)
result replica.host.multipath "${mp:-none}"
[ "$mp" = Y ] || fail "nvme_core multipath=$mp: native multipath is off"
cp /etc/nvme/hostnqn "$LAB_OUT/host.nqn"
for _ in $(seq "$W"); do [ -e "$LAB_OUT/target.ready" ] || [ -e "$LAB_OUT/target.exit" ] && break; nap 1; done
[ -e "$LAB_OUT/target.ready" ] || { fail "target VM not ready"; exit 1; }
read -r _ OP < "$LAB_OUT/target.ready"
step "target ready: owner port $OP"
run ping -c 2 -W 5 "$P" || fail "ping $P"
run nvme discover -t rdma -a "$P" -s "$OP" | tee "$LAB_OUT/discover.txt"
# (nvme-cli prints each entry's trtype and trsvcid before its subnqn); this host connects over RDMA
# only (the nodes' NVMe/TCP listeners, lab.repltcp=1, are listed as PORT/tcp)
disc() { awk -v n="$NQN" -v only="$1" '$1 == "trtype:" {t = $2} $1 == "trsvcid:" {p = $2}
  $1 == "subnqn:" && $2 == n && (only == "" || t == only) {print (only == "" && t != "rdma") ? p "/" t : p}' "$LAB_OUT/discover.txt" | sort; }
DP=$(disc rdma)
result replica.host.discovery_ports "$(disc "" | paste -sd,)"
CPS=$(echo "$DP" | grep -vx "$OP")
[ -n "$CPS" ] || fail "discovery lists no copy node's port"
for p in "$OP" $CPS; do
  run nvme connect -t rdma -n "$NQN" -a "$P" -s "$p" -c 2 || fail "connect path $p"
done
# paths_now: PATHS = "PORT:CTRLSTATE:ANASTATE ..." over the controllers of $NQN (builtins only)
paths_now() {
  local c sub st ad ana f
  PATHS=
  for c in /sys/class/nvme/nvme[0-9]*; do
    read -r sub < "$c/subsysnqn" 2>/dev/null; [ "$sub" = "$NQN" ] || continue
    read -r st < "$c/state"; read -r ad < "$c/address"
    ad=${ad#*trsvcid=}; ad=${ad%%,*}
    ana=-; for f in "$c"/nvme*c*n*/ana_state; do [ -e "$f" ] && read -r ana < "$f"; done
    PATHS+="$ad:$st:$ana "
  done
  PATHS=${PATHS% }
}
want=$(for p in $CPS; do echo "$p:live:inaccessible"; done; echo "$OP:live:optimized")
want=$(echo "$want" | sort | tr '\n' ' ')
for _ in $(seq 300); do paths_now; [ "$(echo "$PATHS" | tr ' ' '\n' | sort | tr '\n' ' ')" = "$want" ] && break; sleep 0.2; done
result replica.host.paths_before "$(echo "$PATHS" | tr ' ' ',')"
NDEV=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$' | head -1)
[ -n "$NDEV" ] || { fail "no multipath namespace device"; exit 1; }
NDEV=/dev/$NDEV
run nvme list-subsys "$NDEV" | tee "$LAB_OUT/list-subsys-before.txt"
[ "$(echo "$PATHS" | tr ' ' '\n' | sort | tr '\n' ' ')" = "$want" ] || fail "paths before: $PATHS, want $want"
# sampler: the paths' states whenever they change, "UPTIME STATES", until sampler.stop
sampler() {
  local last= up
  while [ ! -e "$LAB_OUT/sampler.stop" ]; do
    paths_now
    if [ "$PATHS" != "$last" ]; then read -r up _ < /proc/uptime; echo "$up $PATHS" >> "$LAB_OUT/paths-timeline.txt"; last=$PATHS; fi
    nap 0.2
  done
}
rm -f "$LAB_OUT/paths-timeline.txt" "$LAB_OUT/sampler.stop"
sampler &
SPID=$!
DMESG_START=$(dmesg | wc -l)
step "fio randwrite + crc32c verify over $VS on $NDEV; SIGKILL of the owner after ${KA}s"
tf=$(ts)
fio --name=replica --filename="$NDEV" --rw=randwrite --bs=4k --iodepth=16 --ioengine=libaio --direct=1 \
    --size="$VS" --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
    --write_iops_log="$LAB_OUT/replica" --log_avg_msec=250 \
    --output-format=json --output="$LAB_OUT/fio-replica.json" &
FPID=$!
sleep "$KA"
if kill -0 $FPID 2>/dev/null; then
  tk=$(ts); touch "$LAB_OUT/kill.now"
  result replica.host.kill_asked_at_fio_s "$(awk -v a="$tk" -v b="$tf" 'BEGIN{printf "%.1f", a-b}')"
  wait_file "$LAB_OUT/killed" 120 || fail "the target VM did not report the kill"
  step "owner killed (seen here $(since "$tk")s after asking)"
else fail "fio ended before the kill (lab.verifysize too small?)"; fi
wait $FPID; frc=$?
te=$(ts)
err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-replica.json")
result replica.fio.err "${err:-none}"
[ $frc = 0 ] && [ "$err" = 0 ] || fail "fio rc=$frc err=$err"
for d in write read; do
  result replica.fio.$d.iops "$(json_field "$LAB_OUT/fio-replica.json" $d iops | awk '{printf "%.0f", $1}')"
  result replica.fio.$d.ios "$(json_field "$LAB_OUT/fio-replica.json" $d total_ios)"
  result replica.fio.$d.clat_max_ms "$(json_field "$LAB_OUT/fio-replica.json" $d clat_ns/max | awk '{printf "%.0f", $1/1e6}')"
done
result replica.fio.wall_s "$(awk -v a="$te" -v b="$tf" 'BEGIN{printf "%.1f", a-b}')"
# the longest interval between 250 ms windows in which I/O completed, and where it began
il=$(ls "$LAB_OUT"/replica_iops*.log 2>/dev/null | head -1)
if [ -n "$il" ]; then
  read -r gap at < <(awk -F, '$2+0 > 0 { t = $1+0; if (last != "" && t-last > max) { max = t-last; at = last }; last = t }
                              END { printf "%.2f %.2f\n", max/1000, at/1000 }' "$il")
  result replica.host.io_gap_s "$gap"; result replica.host.io_gap_at_fio_s "$at"
fi
# from the timeline (host clock): the owner's path leaving live -> a copy node's path optimized,
# and how long a copy node's path had no namespace (its target re-attaching it for the new role)
read -r down opt absent < <(awk -v op="$OP" '
  { anyopt = 0; anygone = 0
    for (i = 2; i <= NF; i++) { split($i, f, ":"); st[f[1]] = f[2]; ana[f[1]] = f[3]
      if (f[1] != op && f[3] == "optimized") anyopt = 1
      if (f[1] != op && f[3] == "-") anygone = 1 }
    if (down == "" && st[op] != "live") down = $1
    if (down != "" && opt == "" && anyopt) opt = $1
    if (anygone && gone == "") gone = $1
    if (!anygone && gone != "") { absent += $1 - gone; gone = "" } }
  END { printf "%s %s %.2f\n", (down == "" ? "none" : down), (opt == "" || down == "" ? "none" : sprintf("%.2f", opt - down)), absent }' \
  "$LAB_OUT/paths-timeline.txt")
result replica.host.owner_path_down_to_copy_optimized_s "$opt"
result replica.host.copy_path_without_namespace_s "$absent"
paths_now; result replica.host.paths_after "$(echo "$PATHS" | tr ' ' ',')"
run nvme list-subsys "$NDEV" | tee "$LAB_OUT/list-subsys-after.txt"
case " $PATHS " in *":live:optimized "*) ;; *) fail "no copy node's path is live optimized after the failover: $PATHS" ;; esac
dmesg | tail -n +$((DMESG_START + 1)) | grep -iE 'nvme|rdma' > "$LAB_OUT/kernel-paths.txt"
ioerr=$(dmesg | tail -n +$((DMESG_START + 1)) | grep -E 'I/O error|blk_update_request|critical|Buffer I/O')
result replica.host.kernel_io_errors "$(echo -n "$ioerr" | grep -c .)"
[ -z "$ioerr" ] || { echo "$ioerr"; fail "kernel logged I/O errors"; }
bad=$(dmesg | tail -n +$((DMESG_START + 1)) | grep -E 'WARNING|BUG|Oops|Call Trace|tainted')
[ -z "$bad" ] || { echo "$bad"; fail "kernel warnings"; }
cut -c1-200 "$LAB_OUT/kernel-paths.txt" | head -60
cat "$LAB_OUT/paths-timeline.txt"
touch "$LAB_OUT/fio.done"

step "waiting for n2 to return and its copy to be rebuilt"
for _ in $(seq "$W"); do [ -e "$LAB_OUT/rebuilt" ] || [ -e "$LAB_OUT/rebuild.failed" ] || [ -e "$LAB_OUT/target.exit" ] && break; nap 1; done
if [ -e "$LAB_OUT/rebuilt" ]; then
  # n2's path reconnects (every 2 s) and comes back inaccessible
  for _ in $(seq 300); do paths_now; case " $PATHS " in *" $OP:live:inaccessible "*) break ;; esac; sleep 0.2; done
  result replica.host.paths_after_rebuild "$(echo "$PATHS" | tr ' ' ',')"
  run nvme list-subsys "$NDEV" | tee "$LAB_OUT/list-subsys-after-rebuild.txt"
  fio_job replica.reverify "$NDEV" randwrite 16 --size="$VS" --verify=crc32c --verify_only --verify_state_save=0
fi
touch "$LAB_OUT/sampler.stop"; wait $SPID
run nvme disconnect -n "$NQN" || fail "nvme disconnect"
[ "$FAILS" = 0 ]
