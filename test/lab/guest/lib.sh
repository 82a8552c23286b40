# Helpers sourced by the guest scenarios (inside the guest, as root).
ts() { cut -d' ' -f1 /proc/uptime; }
step() { echo; echo "=== [$(ts)s] $*"; }
run() { echo "+ $*"; "$@"; local rc=$?; [ $rc = 0 ] || echo "!! rc=$rc: $*"; return $rc; }
since() { awk -v a="$1" -v b="$(ts)" 'BEGIN{printf "%.2f", b-a}'; }
FAILS=0
# kernel messages before this line (boot noise under TCG) are not the scenario's
DMESG_START=$(dmesg | wc -l)
fail() { echo "FAIL: $*"; FAILS=$((FAILS+1)); }
# result KEY VALUE: one machine-readable line per measured figure, collected by run.sh
result() { echo "RESULT $1 $2"; echo "$1 $2" >> "$LAB_OUT/results.txt"; }
# net_up [CIDR]: eth0 up with an address (default 10.0.2.15/24, the slirp guest address); sets IP.
# lab.mtu=N sets eth0's MTU first (rxe derives its RoCE MTU from it: 4096 needs N >= 4096 + headers,
# e.g. 9000 as RoCE fabrics run; the default 1500 gives RoCE MTU 1024).
net_up() {
  local cidr=${1:-${LAB_IP:-10.0.2.15/24}}
  if [ -n "${LAB_MTU:-}" ]; then run ip link set eth0 mtu "$LAB_MTU" || return 1; fi
  ip link set eth0 up
  ip addr add "$cidr" dev eth0 2>/dev/null
  IP=${cidr%/*}
  # wait until the address is usable (DAD does not apply to IPv4; the link must be up)
  for _ in $(seq 50); do ip -br link show eth0 | grep -q 'UP' && break; sleep 0.1; done
}
# rxe_up: Soft-RoCE device rxe0 on eth0, user verbs and rdma_cm loaded
rxe_up() {
  run modprobe rdma_rxe || return 1
  run modprobe ib_uverbs; run modprobe rdma_ucm
  run rdma link add rxe0 type rxe netdev eth0 || return 1
  for _ in $(seq 50); do rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE' && break; sleep 0.1; done
  rdma link show
  rxe_mtu=$(ibv_devinfo -d rxe0 2>/dev/null | awk '/active_mtu/ {print $2; exit}')
  echo "rxe0 active MTU: ${rxe_mtu:-unknown} (eth0 MTU $(cat /sys/class/net/eth0/mtu))"
}
# rxe_counters: "name value" per rxe0 hardware counter (retransmissions, RNR NAKs, sequence errors…)
# (nothing when there is no rxe0: the NVMe/TCP perf variant brings none up)
rxe_counters() {
  local f; [ -d /sys/class/infiniband/rxe0 ] || return 0
  for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do echo "${f##*/} $(cat "$f")"; done
}
# net_packets: "TX RX" packets of eth0 so far
net_packets() { echo "$(cat /sys/class/net/eth0/statistics/tx_packets) $(cat /sys/class/net/eth0/statistics/rx_packets)"; }
# peer_kill_begin / peer_kill_end: bracket the SIGKILL of a process that owns RDMA resources while
# I/O runs. The kernel tears the dead process's memory regions down before or while its QPs go, so
# an RDMA operation in flight can meet a freed MR, and rxe logs the error completion: status 10
# (remote access error) when the target's RDMA READ of write data reaches a killed initiator's MR
# (rdmablkd logs "RDMA READ failed" too), status 4 (local protection error) when a killed target's
# own QP still executes a READ/WRITE whose local MR is gone. The expected consequence of the kill;
# only those lines, only inside the bracket, are set aside for dmesg_check.
peer_kill_begin() { PEER_KILL_START=$(dmesg | wc -l); }
peer_kill_end() {
  local lines
  lines=$(dmesg | tail -n +$((PEER_KILL_START + 1)) | grep -E 'rxe[0-9]+: qp#[0-9]+ make_send_cqe: non-flush error status = (4|10)$')
  [ -n "$lines" ] || return 0
  echo "expected after the SIGKILL of $1 (an RDMA operation met a freed memory region):"; echo "$lines"
  echo "$lines" >> "$LAB_OUT/dmesg-expected-${LAB_NAME:-guest}.txt"
}
# dmesg_check: fail on kernel warnings, bugs and error lines logged since the scenario started
# (except the rxe notice about the virtio link speed and the lines peer_kill_end set aside)
dmesg_check() {
  local bad
  dmesg > "$LAB_OUT/dmesg-${LAB_NAME:-guest}.txt"
  touch "$LAB_OUT/dmesg-expected-${LAB_NAME:-guest}.txt"
  bad=$(dmesg | tail -n +$((DMESG_START + 1)) | grep -E 'WARNING|BUG|Oops|Call Trace|error|Error|ERROR|failed|timeout|tainted' \
        | grep -vE 'speed is unknown|9pnet|Fast TSC calibration failed' | grep -vxF -f "$LAB_OUT/dmesg-expected-${LAB_NAME:-guest}.txt")
  if [ -n "$bad" ]; then echo "$bad"; fail "dmesg has warnings/errors ($(echo "$bad" | wc -l) lines)"; return 1; fi
  echo "dmesg clean"
}
# json_field FILE DIR KEY: first numeric "KEY" inside the "DIR" (read|write) block of fio JSON output;
# KEY may be a path like clat_ns/mean or clat_ns/percentile/99.000000
json_field() {
  awk -v d="\"$2\"" -v key="$3" '
    BEGIN { n = split(key, k, "/"); want = 1 }
    $1 == d && $2 == ":" { in_dir = 1; next }
    in_dir && $1 == "\"" k[want] "\"" {
      if (want == n) { v = $3; gsub(/[,"]/, "", v); print v; exit }
      want++
    }' "$1"
}
# fio_job LABEL DEV RW QD [extra fio args]: one 4k job; writes $LAB_OUT/fio-LABEL.json and RESULT lines
# LABEL.iops, LABEL.clat_avg_us, LABEL.clat_p99_us, LABEL.err. Returns fio's exit code.
fio_job() {
  local label=$1 dev=$2 rw=$3 qd=$4; shift 4
  local f=$LAB_OUT/fio-$label.json dir=read
  case "$rw $*" in *--verify_only*) ;; *write*) dir=write ;; esac
  echo "+ fio $label: $rw 4k qd=$qd on $dev $*"
  fio --name="$label" --filename="$dev" --rw="$rw" --bs=4k --iodepth="$qd" --ioengine=libaio --direct=1 \
      --output-format=json --output="$f" "$@"
  local rc=$? err
  err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$f")
  result "$label.iops" "$(json_field "$f" $dir iops | awk '{printf "%.0f", $1}')"
  result "$label.clat_avg_us" "$(json_field "$f" $dir clat_ns/mean | awk '{printf "%.0f", $1/1000}')"
  result "$label.clat_p99_us" "$(json_field "$f" $dir clat_ns/percentile/99.000000 | awk '{printf "%.0f", $1/1000}')"
  result "$label.err" "${err:-none}"
  [ $rc = 0 ] && [ "$err" = 0 ] || { fail "fio $label rc=$rc err=$err"; return 1; }
}
# fio_suite PREFIX DEV: the fio jobs compared between targets: 4k randread/randwrite at QD16 and QD32
# (time-based, $LAB_FIOTIME s, default 20), then randwrite + crc32c verify over $LAB_VERIFYSIZE (128M)
fio_suite() {
  local p=$1 dev=$2 ft=${LAB_FIOTIME:-20}
  for rw in randread randwrite; do
    for qd in 16 32; do
      fio_job "$p.$rw.qd$qd" "$dev" $rw $qd --time_based --runtime="$ft" --size=768M
    done
  done
  fio_job "$p.verify" "$dev" randwrite 16 --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c \
      --do_verify=1 --verify_fatal=1 --verify_state_save=0
}
# sysprof_start LABEL / sysprof_stop: a system-wide CPU profile of this guest (every process and
# the kernel: perf record -a -g on the cpu-clock software event, 499 Hz; TCG has no PMU) around a
# job, into $LAB_OUT/sys-LABEL.perf, then three text reports beside it: sys-LABEL.comm.txt (share per
# command and DSO), sys-LABEL.sym.txt (per symbol, flat) and sys-LABEL.cum.txt (per symbol with
# callees), and the kernel's symbols (kallsyms-VERSION.txt, once). Without perf in the image: nothing.
SYSPROF_PID=; SYSPROF_LABEL=
sysprof_start() {
  command -v perf >/dev/null || return 0
  SYSPROF_LABEL=$1
  # recorded on the guest's own disk: perf cannot mmap its output on the 9p share
  perf record -a -g -F 499 -e cpu-clock -o "/tmp/sys-$1.perf" > "$LAB_OUT/sys-$1.log" 2>&1 &
  SYSPROF_PID=$!
}
sysprof_stop() {
  [ -n "$SYSPROF_PID" ] || return 0
  kill -INT "$SYSPROF_PID"; wait "$SYSPROF_PID" 2>/dev/null
  local f=$LAB_OUT/sys-$SYSPROF_LABEL
  mv "/tmp/sys-$SYSPROF_LABEL.perf" "$f.perf"
  perf report -i "$f.perf" --stdio --no-children -g none --sort comm,dso --percent-limit 0.3 > "$f.comm.txt" 2>/dev/null
  perf report -i "$f.perf" --stdio --no-children -g none --sort comm,sym --percent-limit 0.2 > "$f.sym.txt" 2>/dev/null
  perf report -i "$f.perf" --stdio --children -g none --sort comm,sym --percent-limit 1 > "$f.cum.txt" 2>/dev/null
  # for reports on the host: perf report -i FILE --kallsyms kallsyms-VERSION.txt --symfs DIR
  # (DIR/mnt/share a link to the lab's share directory)
  [ -e "$LAB_OUT/kallsyms-$(uname -r).txt" ] || cat /proc/kallsyms > "$LAB_OUT/kallsyms-$(uname -r).txt"
  SYSPROF_PID=
}
# perf_fio LABEL DEV RW BS QD JOBS [extra fio args]: one fio job of JOBS jobs (group reporting);
# writes $LAB_OUT/fio-LABEL.json and RESULT lines LABEL.{iops,ios,p50_us,p99_us,err} (ios: total
# I/Os, for CPU per I/O). Returns non-zero (and counts a failure) unless fio exited 0 with err=0.
# FIO_END_BUSY and FIO_END_CTXT: cpu_busy and ctxt_count as fio ended, before the parsing of its
# output (a dozen awk processes, each a fork and an exec that TCG makes cost tens of ms) adds to
# them: a caller measuring the job's CPU takes these.
perf_fio() {
  local label=$1 dev=$2 rw=$3 bs=$4 qd=$5 nj=$6; shift 6
  local f=$LAB_OUT/fio-$label.json dir=read rc err
  case "$rw $*" in *--verify_only*) ;; *write*) dir=write ;; esac
  fio --name="$label" --filename="$dev" --rw="$rw" --bs="$bs" --iodepth="$qd" --numjobs="$nj" \
      --group_reporting --ioengine=libaio --direct=1 --output-format=json --output="$f" "$@"
  rc=$?
  FIO_END_BUSY=$(cpu_busy); FIO_END_CTXT=$(ctxt_count)
  err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$f")
  result "$label.iops" "$(json_field "$f" $dir iops | awk '{printf "%.0f", $1}')"
  result "$label.ios" "$(json_field "$f" $dir total_ios)"
  result "$label.p50_us" "$(json_field "$f" $dir clat_ns/percentile/50.000000 | awk '{printf "%.0f", $1/1000}')"
  result "$label.p99_us" "$(json_field "$f" $dir clat_ns/percentile/99.000000 | awk '{printf "%.0f", $1/1000}')"
  result "$label.err" "${err:-none}"
  [ $rc = 0 ] && [ "$err" = 0 ] || { fail "fio $label rc=$rc err=$err"; return 1; }
}
# cpu_busy: the guest's busy CPU time in jiffies (USER_HZ) since boot, all CPUs:
# user+nice+system+irq+softirq from /proc/stat (idle, iowait and steal are not busy).
# Both read /proc/stat with bash's own read (no process started).
cpu_busy() { local c u n s i w irq sirq r; read -r c u n s i w irq sirq r < /proc/stat; echo $((u + n + s + irq + sirq)); }
# stat_total KEY: the first number of /proc/stat's KEY line
stat_total() { local k v r; while read -r k v r; do [ "$k" = "$1" ] && { echo "$v"; return; }; done < /proc/stat; }
# irq_count: the guest's interrupts since boot, all sources (/proc/stat's intr total)
irq_count() { stat_total intr; }
# ctxt_count: the guest's context switches since boot, all CPUs
ctxt_count() { stat_total ctxt; }
# thread_snap PID: one line per thread of PID: "TID CTXT CPU" (voluntary + involuntary context
# switches, utime+stime jiffies); thread_delta BEFORE AFTER: the threads' changes between two
# snapshots, busiest first by switches, as "TID#N:SWITCHES:JIFFIES" joined by commas (top 4; N:
# the thread's place in creation order, 0 = the main thread; in a Go program 1 is the runtime's
# monitor, sysmon).
thread_snap() {
  local t; for t in /proc/"$1"/task/*; do
    echo "${t##*/} $(awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v+n}' "$t/status" 2>/dev/null) $(awk '{print $14+$15}' "$t/stat" 2>/dev/null)"
  done
}
thread_delta() {
  awk 'NR==FNR {c[$1]=$2; j[$1]=$3; next} {printf "%s:%d:%d\n", $1, $2-c[$1], $3-j[$1]}' <(echo "$1") <(echo "$2") |
    sort -t: -k1 -n | awk -F: '{printf "%s#%d:%s:%s\n", $1, NR - 1, $2, $3}' |
    sort -t: -k2 -n -r | head -4 | paste -sd, -
}
# rxe_snap [DEV]: the RDMA device's port counters (rxe: packets sent and received, RNR NAKs, retries,
# sequence errors, ...) as "name value" lines, read from sysfs (no process per counter);
# rxe_delta OLD NEW: the counters that changed, "name:delta" comma-separated.
rxe_snap() {
  local f v; for f in /sys/class/infiniband/"${1:-rxe0}"/ports/1/hw_counters/*; do
    [ -r "$f" ] && read -r v < "$f" && echo "${f##*/} $v"
  done
}
rxe_delta() {
  awk 'NR==FNR {o[$1]=$2; next} $2 != o[$1] {printf "%s:%d\n", $1, $2-o[$1]}' <(echo "$1") <(echo "$2") | paste -sd, -
}
# proc_cpu PID: utime+stime of one process in jiffies (0 when it is gone).
proc_cpu() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# nvmet_up NQN DEV IP PORT [TRANSPORT]: kernel nvmet-rdma (or nvmet-tcp with TRANSPORT tcp)
# serving DEV as namespace 1 of NQN on IP:PORT.
nvmet_up() {
  local nqn=$1 dev=$2 ip=$3 port=$4 tr=${5:-rdma} c=/sys/kernel/config/nvmet
  modprobe nvmet && modprobe "nvmet-$tr" || return 1
  mkdir "$c/subsystems/$nqn" && echo 1 > "$c/subsystems/$nqn/attr_allow_any_host" || return 1
  mkdir "$c/subsystems/$nqn/namespaces/1" && echo -n "$dev" > "$c/subsystems/$nqn/namespaces/1/device_path" || return 1
  echo 1 > "$c/subsystems/$nqn/namespaces/1/enable" || return 1
  mkdir "$c/ports/1" || return 1
  echo "$tr" > "$c/ports/1/addr_trtype"; echo ipv4 > "$c/ports/1/addr_adrfam"
  echo "$ip" > "$c/ports/1/addr_traddr"; echo "$port" > "$c/ports/1/addr_trsvcid"
  ln -s "$c/subsystems/$nqn" "$c/ports/1/subsystems/$nqn"
}
# nvmet_down NQN: undo nvmet_up.
nvmet_down() {
  local nqn=$1 c=/sys/kernel/config/nvmet
  rm -f "$c/ports/1/subsystems/$nqn"; rmdir "$c/ports/1" 2>/dev/null
  echo 0 > "$c/subsystems/$nqn/namespaces/1/enable" 2>/dev/null
  rmdir "$c/subsystems/$nqn/namespaces/1" "$c/subsystems/$nqn" 2>/dev/null
}
# datafs_up DIR MB: DIR on a fresh ext4 file system over a brd RAM disk of MB MiB (lab.datafs=ext4,
# the default), so files there take O_DIRECT and io_uring as on a disk; lab.datafs=tmpfs leaves DIR
# on the guest's tmpfs (which refuses O_DIRECT: the file backend's blocking pwrite path). Prints
# which: ext4 or tmpfs.
datafs_up() {
  mkdir -p "$1"
  if [ "${LAB_DATAFS:-ext4}" = tmpfs ]; then echo tmpfs; return 0; fi
  modprobe brd rd_nr=1 rd_size=$(($2 * 1024)) || return 1
  mkfs.ext4 -q -F /dev/ram0 >/dev/null && mount -o noatime /dev/ram0 "$1" || return 1
  echo ext4
}
# probe_tcp_up DEV NQN: the share's rdmablkd (the one the last run.sh built) serving DEV as
# namespace 1 of NQN over NVMe/TCP on 127.0.0.1:4420 (state and log in /tmp/rd; DPID its pid), with
# the kernel nvme-tcp host connected (NDEV its namespace device). For test/lab/probes/.
probe_tcp_up() {
  mkdir -p /tmp/rd
  cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: soft}
listeners: [{addr: "127.0.0.1:4420", transport: tcp}]
volumes: [{name: vol, path: $1, block_size: 512}]
subsystems:
  - nqn: $2
    serial: rdmablkprobe01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: vol}]
EOC
  /mnt/share/bin/rdmablkd --config /tmp/rd/rdmablkd.yaml > /tmp/rd/log 2>&1 &
  DPID=$!
  for _ in $(seq 100); do grep -q 'rdmablkd ready' /tmp/rd/log && break; sleep 0.1; done
  modprobe nvme-tcp
  nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$2" > /dev/null || { cat /tmp/rd/log; return 1; }
  nvme_ndev || { echo "no namespace device"; return 1; }
}
# nvme_ndev: NDEV, the first NVMe namespace device (nvmeXnY) to appear within 5 s.
nvme_ndev() {
  NDEV=
  for _ in $(seq 50); do NDEV=$(ls /dev | grep -E '^nvme[0-9]+n[0-9]+$' | head -1); [ -n "$NDEV" ] && return 0; sleep 0.1; done
  return 1
}
# nullb_up SIZE_MB: a memory-backed null_blk device through configfs (prints its path); LAB_NULLIRQ
# (lab.nullirq) sets its irqmode (0: completes during submission; default 1: softirq).
nullb_up() {
  local n=/sys/kernel/config/nullb/nullb0
  modprobe null_blk nr_devices=0 || return 1
  mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
  mkdir -p "$n" && echo "$1" > "$n/size" && echo 1 > "$n/memory_backed" && echo 512 > "$n/blocksize" &&
    { [ -z "${LAB_NULLIRQ:-}" ] || echo "$LAB_NULLIRQ" > "$n/irqmode"; } &&
    echo 1 > "$n/power" || return 1
  for _ in $(seq 50); do [ -b /dev/nullb0 ] && break; sleep 0.1; done
  echo /dev/nullb0
}
# insn_mark DIR LABEL COUNT: a mark for the insncount QEMU plugin (test/lab/probes/insncount): the
# line "K LABEL COUNT" in DIR/marks, then DIR/mark.K, which the plugin answers with DIR/dump.K (the
# guest's instructions per translated block so far); waits for the dump. K is one more than the
# marks so far (counted from the files, so a background subshell may mark too).
insn_mark() {
  local had k
  had=$(shopt -p nullglob); shopt -s nullglob
  k=( "$1"/mark.* ); k=$((${#k[@]} + 1)); eval "$had"
  INSN_K=$k
  echo "$k $2 $3" >> "$1/marks"
  : > "$1/mark.$k"
  wait_file "$1/dump.$k" 120 || echo "insn_mark: no dump $k in $1"
}
# insn_window DIR LABEL DEV SECONDS: in the background, the marks "LABEL start" 2 s into a fio job
# of SECONDS on DEV (nvme0n1, ublkb0, ...) and "LABEL end" 2 s before it ends, each with DEV's I/O
# count, so that the window holds neither fio's start nor its exit; INSN_PID is the subshell's pid.
insn_window() {
  local w=$(($4 > 5 ? $4 - 4 : 1)) # jobs of 5 s or less: a 1 s window
  ( nap 2; insn_mark "$1" "$2 start" "$(dev_ios "$3")"; nap "$w"; insn_mark "$1" "$2 end" "$(dev_ios "$3")" ) &
  INSN_PID=$!
}
# dev_ios DEV: reads + writes completed on DEV (nvme0n1, ublkb0, nbd0). With native NVMe multipath
# the head (nvmeXnY) counts its I/O from 6.12 on, not in 6.1, where only its paths (nvmeXcZnY,
# hidden, under /sys/class/nvme) do: the head's count when it has one, else its paths'. Bash
# builtins only: no process started (it runs inside insncount windows).
dev_ios() {
  local x=${1#nvme} f n=0 r1 r2 r3 r4 w1 rest
  read -r r1 r2 r3 r4 w1 rest < "/sys/block/$1/stat" && n=$((r1 + w1))
  if [ "$n" = 0 ] && [[ $1 == nvme* ]]; then
    x=${x%%n*}
    for f in /sys/class/nvme/*/"nvme${x}c"*"n${1##*n}"/stat; do
      [ -e "$f" ] || continue
      read -r r1 r2 r3 r4 w1 rest < "$f"; n=$((n + r1 + w1))
    done
  fi
  echo "$n"
}
# nap SECONDS: sleep without a fork (bash's read timing out on a FIFO nobody writes): the
# perf scenario's polling must not cost the guest the CPU time it is measuring (a fork+exec of
# sleep costs tens of ms under TCG).
nap() {
  if [ -z "${NAPFD:-}" ]; then mkfifo /tmp/.nap 2>/dev/null; exec {NAPFD}<>/tmp/.nap; fi
  read -r -t "$1" -u "$NAPFD" _ 2>/dev/null
}
# wait_file PATH SECONDS: poll for a file in the 9p share (the other VM writes it).
wait_file() { local i; for ((i = 0; i < $2 * 10; i++)); do [ -e "$1" ] && return 0; nap 0.1; done; return 1; }

# target_kill9_files NAME DEV READY: mkfs.ext4 on DEV (a block device of ours), write files while rdmablkd is SIGKILLed and
# restarted by the scenario's start_daemon (READY: its count of "rdmablkd ready" lines after the
# restart; DPID is the daemon's pid), then e2fsck and compare the files' checksums.
target_kill9_files() {
  local DEV=$2
  run mkfs.ext4 -q -F "$DEV" || { fail "mkfs.ext4 (target kill)"; return 1; }
  run mount "$DEV" /mnt/v || { fail "mount (target kill)"; return 1; }
  for i in $(seq 8); do head -c $((4 << 20)) /dev/urandom > /tmp/t$i; done
  (cd /tmp && sha256sum t[1-8] > /tmp/tsums)
  (for i in $(seq 8); do cp /tmp/t$i /mnt/v/t$i && sync; done) &
  local wpid=$!
  sleep 2
  peer_kill_begin
  run kill -9 "$DPID"; wait "$DPID" 2>/dev/null
  start_daemon "$3" || return 1
  peer_kill_end "rdmablkd ($1)"
  wait "$wpid" || fail "writing files across kill -9 of rdmablkd ($1)"
  run umount /mnt/v || fail "umount (target kill)"
  echo 3 > /proc/sys/vm/drop_caches
  run e2fsck -fn "$DEV" || fail "e2fsck after kill -9 of rdmablkd ($1)"
  run mount "$DEV" /mnt/v || { fail "mount after kill -9 of rdmablkd ($1)"; return 1; }
  (sed 's|  t|  /mnt/v/t|' /tmp/tsums | sha256sum -c) &&
    result "$1.target_kill9.files_intact" yes || { result "$1.target_kill9.files_intact" no; fail "files differ after kill -9 of rdmablkd ($1)"; }
  run umount /mnt/v
}
# leg_watch NAME PID DATADIR PORT (background; lab.legwatch=1 in replperf): until $LAB_OUT/bench.done,
# once a second, this guest's TCP sockets on PORT (either end) as /proc/net/tcp lists them (tx_queue and
# rx_queue: bytes the host has not had acknowledged, bytes the target has not read; read without a
# fork, which costs a TCG guest tens of ms) and eth0's packet counters, to $LAB_OUT/legwatch-NAME.txt;
# every 5 s, when n1's log shows a new replica I/O timeout, SIGUSR1 to rdmablkd PID (it writes its
# goroutine stacks into DATADIR) and the stack files copied to $LAB_OUT. What a "lost" leg command
# left behind: which socket still holds bytes and where each daemon's goroutines wait.
leg_watch() {
  local name=$1 pid=$2 dir=$3 out=$LAB_OUT/legwatch-$1.txt seen=0 n k=0 l tx rx hex
  hex=$(printf ':%04X ' "$4")
  while [ ! -e "$LAB_OUT/bench.done" ] && kill -0 "$pid" 2>/dev/null; do
    read -r tx < /sys/class/net/eth0/statistics/tx_packets; read -r rx < /sys/class/net/eth0/statistics/rx_packets
    { echo "== ${EPOCHREALTIME} tx=$tx rx=$rx"
      while read -r l; do [[ $l == *"$hex"* ]] && echo "$l"; done < /proc/net/tcp; } >> "$out"
    k=$((k + 1))
    if [ $((k % 5)) = 0 ]; then
      n=$(grep -c 'replica I/O timed out' "$LAB_OUT/rdmablkd-n1.log" 2>/dev/null)
      if [ "${n:-0}" -gt "$seen" ]; then
        seen=$n; echo "== ${EPOCHREALTIME} timeout $n seen: SIGUSR1" >> "$out"
        kill -USR1 "$pid"; nap 1; cp "$dir"/rdmablkd-*-stacks-*.txt "$LAB_OUT/" 2>/dev/null
      fi
    fi
    nap 1
  done
}
