#!/bin/bash
# frontends scenario (issue 13, "Must show"), initiator VM: the same rdmablkd volume in the other VM
# (lab.peer, served by scenario-frontends-target.sh) through three block device paths, interleaved:
#   K  the kernel nvme-rdma host (nvme connect -t rdma)      -> /dev/nvmeXnY
#   U  rdmablk connect --frontend ublk (our initiator)        -> /dev/ublkbN (skipped without ublk_drv)
#   N  rdmablk connect --frontend nbd  (our initiator)        -> /dev/nbdN
# lab.rounds rounds (3); the order rotates per round (K U N, U N K, N K U, ...). Per configuration:
# connect, fio (libaio, direct, lab.fiotime s each) 4 KiB randread and randwrite at QD32 × 2 jobs,
# in round 1 also a crc32c write+verify over lab.verifysize (64M, in two jobs of half each), then a
# clean disconnect; before each connect and after each disconnect no device of any of the three may
# be left. This guest's busy CPU time (/proc/stat) and the attachment process's own are sampled
# around every timed job: the frontends differ on the client side. With lab.pprof=R the attachment
# process writes a Go CPU profile per connection in round R (rdmablk-CFG.rR.pprof, `go tool pprof -top
# FILE`); by default it runs without one, as the kernel host does.
# RESULT lines: fe.kernel, fe.hz, fe.configs, fe.order.rR, fe.ublk.skipped,
# fe.CFG.{rr32,rw32}.rR.{iops,ios,p50_us,p99_us,err,busy_j,proc_j,wall_s,threads,tbusy_j,tproc_j,rxe}
# (tbusy_j, tproc_j: the target guest's busy jiffies and rdmablkd's over the job, from its
# target-cpu.txt samples, 0.25 s apart; rxe: this guest's rxe0 port counters that changed over the
# job, name:delta — packets, RNR NAKs, retries), fe.CFG.verify.*,
# fe.CFG.connect_s.rR, fe.CFG.device.rR, fe.CFG.provider, fe.CFG.queues (I/O queues x depth), fe.leftover.* (CFG: kernel, ublk, nbd).
. /mnt/share/scripts/lib.sh
P=${LAB_PEER:?lab.peer=IP}; NQN=nqn.2026-11.io.rdmablk:lab; B=/mnt/share/bin/rdmablk
FT=${LAB_FIOTIME:-10}; ROUNDS=${LAB_ROUNDS:-3}; VS=${LAB_VERIFYSIZE:-64M}
NAME=fe; export RDMABLK_RUN_DIR=/run/rdmablk
trap 'touch "$LAB_OUT/initiator.done"' EXIT
net_up; rxe_up || exit 1
result fe.kernel "$(uname -r)"
result fe.hz "$(getconf CLK_TCK)"
run modprobe nvme-rdma || exit 1
run modprobe nbd nbds_max=4 || exit 1
CFGS="kernel ublk nbd"
if ! run modprobe ublk_drv; then
  result fe.ublk.skipped "$(uname -r)"
  echo "no ublk_drv in kernel $(uname -r) (ublk needs 6.0+: LAB_KERNEL=6.12): ublk rows skipped"
  CFGS="kernel nbd"
fi
# lab.configs=kernel,ublk,ublk-np,...: the configurations to run instead; experiment rows: a name
# ending in -np is that frontend with GODEBUG=asyncpreemptoff=1 in the attachment (the runtime's
# signal-based preemption off), -b the attachment started under chrt --batch (SCHED_BATCH: its
# threads do not preempt the task that wakes them), -n the attachment with --sched normal (its
# threads left SCHED_OTHER; --sched batch is connect's default), -base the attachment built from
# run.sh's BASELINE=REV (bin/rdmablk-base; the target stays the built one)
# lab.sysprof=R: in round R, a system-wide profile of this guest around each timed job (lib.sh
# sysprof_start: sys-LABEL.perf with its .comm.txt and .sym.txt reports in the run's out directory;
# the target guest's own around the same job: sys-target.LABEL.*);
# the profiler's own cost is in that round's figures, alike for every configuration;
# lab.gotrace=R: in round R the attachments also write a Go execution trace (rdmablk-CFG.rR.trace,
# `go tool trace -pprof=sync FILE`: where its goroutines block); it slows them, so that round's
# figures are not theirs
# lab.insns=1 (run.sh INSNS=1, which boots this guest with the insncount QEMU plugin): marks inside
# every timed job (2 s after its start to 2 s before its end) in $LAB_OUT/insn (lib.sh insn_mark),
# labelled "CFG.JOB.rR start|end" with the device's I/O count, for test/lab/probes/insncount/analyze.py
INSN=
if [ "${LAB_INSNS:-0}" = 1 ]; then INSN=$LAB_OUT/insn; mkdir -p "$INSN"; cat /proc/kallsyms > "$INSN/kallsyms"; fi
if [ -n "${LAB_CONFIGS:-}" ]; then
  CFGS=${LAB_CONFIGS//,/ }
  [ -e /dev/ublk-control ] || CFGS=$(echo "$CFGS" | tr ' ' '\n' | grep -v '^ublk' | tr '\n' ' ')
fi
result fe.configs "$(echo $CFGS | tr ' ' ',')"
wait_file "$LAB_OUT/target.ready" 900 || { fail "target VM never got ready"; exit 1; }
run ping -c 2 -W 5 "$P" || fail "ping $P"

# devices: every block device any configuration may have left: nvme namespaces, ublk disks,
# connected nbd devices (an nbd node always exists; connected ones have a pid in sysfs), and
# rdmablk attachments.
devices() {
  ls /dev | grep -E '^(nvme[0-9]+n[0-9]+|ublkb[0-9]+)$' | sed 's|^|/dev/|'
  local p; for p in /sys/block/nbd*/pid; do [ -e "$p" ] && echo "/dev/$(basename "$(dirname "$p")")"; done
  [ -n "$(ls "$RDMABLK_RUN_DIR"/*.json 2>/dev/null)" ] && echo "rdmablk-attachment:$(ls "$RDMABLK_RUN_DIR"/*.json | xargs -n1 basename | tr '\n' ' ')"
}
# rc_qps: RC queue pairs on this guest's RDMA device (the kernel host's and our initiator's; the
# GSI QP is not RC).
rc_qps() { rdma resource show qp 2>/dev/null | grep -c 'type RC'; }
# clean WHEN: no device of any configuration is present (waits up to 10 s for one going away), and
# no RC QP is left (waits up to 10 s more; a QP still there is recorded, not failed: the kernel's
# nvme-rdma destroys its QPs after nvme disconnect returns). Twice (runs 2026-11-25-0728 and
# 2026-12-04-1947) the 6.12 guest kernel crashed in rxe right as the nbd configuration connected
# just after the kernel host's disconnect (round 3): the next configuration starts on a device with
# no queue pairs left.
clean() {
  local left i
  for ((i = 0; i < 100; i++)); do left=$(devices); [ -z "$left" ] && break; nap 0.1; done
  if [ -n "$left" ]; then
    result "fe.leftover.$1" "$(echo $left | tr ' ' ',')"
    fail "left over $1: $left"; return 1
  fi
  for ((i = 0; i < 100; i++)); do [ "$(rc_qps)" = 0 ] && return 0; nap 0.1; done
  result "fe.leftover_qps.$1" "$(rc_qps)"
}
# fe_of CFG: the frontend of a configuration (kernel, ublk, nbd)
fe_of() { local f=${1%-base}; f=${f%-np}; f=${f%-b}; echo "${f%-n}"; }
# up CFG ROUND: connect; sets DEV.
up() {
  local c=$1 r=$2 t0 out rc
  t0=$(ts); DEV=
  case $c in
    kernel)
      run nvme connect -t rdma -n "$NQN" -a "$P" -s 4420 || return 1
      for _ in $(seq 100); do DEV=$(ls /dev | grep -E '^nvme[0-9]+n[0-9]+$' | head -1); [ -n "$DEV" ] && break; nap 0.1; done
      [ -n "$DEV" ] && DEV=/dev/$DEV
      local c0=/sys/class/nvme/$(basename "$DEV" | sed 's/n[0-9]*$//')
      [ -r "$c0/queue_count" ] && result fe.kernel.queues "$(( $(cat "$c0/queue_count") - 1 ))x$(( $(cat "$c0/sqsize") + 1 ))" ;;
    ublk|nbd|ublk-np|nbd-np|ublk-b|nbd-b|ublk-n|nbd-n|ublk-base|nbd-base)
      local gd=${GODEBUG:-} pre=() more=() bin=$B
      case $c in *-np) gd=asyncpreemptoff=1 ;; *-b) pre=(chrt --batch 0) ;; *-n) more=(--sched normal) ;;
        *-base) bin=$B-base; [ -x "$bin" ] || { fail "$c: no $bin (run.sh BASELINE=REV builds it)"; return 1; } ;; esac
      [ "${LAB_GOTRACE:-0}" = "$r" ] && more+=(--trace "$LAB_OUT/rdmablk-$c.r$r.trace")
      [ "${LAB_PPROF:-0}" = "$r" ] && more+=(--cpuprofile "$LAB_OUT/rdmablk-$c.r$r.pprof")
      out=$(GODEBUG=$gd "${pre[@]}" "$bin" connect --provider ibverbs -a "$P:4420" --nqn "$NQN" --name "$NAME" --frontend "$(fe_of "$c")" \
        "${more[@]}" 2>&1); rc=$?
      echo "$out"
      [ $rc = 0 ] || { cat "$RDMABLK_RUN_DIR/$NAME.log"; return 1; }
      DEV=$(echo "$out" | awk '$1=="device:" {print $2; exit}')
      result "fe.$c.queues" "$(echo "$out" | sed -n 's/.*, \([0-9]*\) queues × \([0-9]*\),.*/\1x\2/p' | head -1)"
      result "fe.$c.provider" ibverbs ;;
  esac
  case "$(fe_of "$c"):$DEV" in kernel:/dev/nvme*|ublk:/dev/ublkb*|nbd:/dev/nbd*) ;; *) fail "$c: no device ('$DEV')"; return 1 ;; esac
  for _ in $(seq 100); do [ "$(cat /sys/block/"${DEV#/dev/}"/size 2>/dev/null || echo 0)" != 0 ] && break; nap 0.1; done
  result "fe.$c.connect_s.r$r" "$(since "$t0")"
  result "fe.$c.device.r$r" "$DEV"
}
down() {
  case $1 in
    kernel) run nvme disconnect -n "$NQN" ;;
    *) run "$B" disconnect "$NAME" ;;
  esac
}
# job LABEL FIO-ARGS...: perf_fio with this guest's busy jiffies and the attachment's own around it.
job() {
  local label=$1 b0 b1 a0 a1 x0 x1 t0 apid=; shift
  [ -e "$RDMABLK_RUN_DIR/$NAME.json" ] && apid=$(sed 's/.*"pid":\([0-9]*\).*/\1/' "$RDMABLK_RUN_DIR/$NAME.json")
  a0=0; [ -n "$apid" ] && a0=$(proc_cpu "$apid")
  local th0=; [ -n "$apid" ] && th0=$(thread_snap "$apid")
  local tc0 tc1; tc0=$(tail -n 1 "$LAB_OUT/target-cpu.txt" 2>/dev/null)
  if [ "${LAB_SYSPROF:-0}" = "$r" ]; then
    # the target guest profiles itself too (scenario-twovm-target.sh): sys-target.LABEL.*
    rm -f "$LAB_OUT/tprof.started"; echo "$label" > "$LAB_OUT/tprof.start"
    wait_file "$LAB_OUT/tprof.started" 10 || fail "target did not start its profile for $label"
    sysprof_start "$label"
  fi
  local q0; q0=$(rxe_snap)
  local ip=
  if [ -n "$INSN" ]; then
    [ -n "$apid" ] && cat "/proc/$apid/maps" > "$INSN/rdmablk.maps"
    insn_window "$INSN" "${label#fe.}" "${1#/dev/}" "$FT"; ip=$INSN_PID
  fi
  t0=$(ts); b0=$(cpu_busy); x0=$(ctxt_count)
  perf_fio "$label" "$@"
  [ -n "$ip" ] && wait "$ip"
  b1=$FIO_END_BUSY; x1=$FIO_END_CTXT; a1=0; [ -n "$apid" ] && a1=$(proc_cpu "$apid")
  result "$label.rxe" "$(rxe_delta "$q0" "$(rxe_snap)")"
  tc1=$(tail -n 1 "$LAB_OUT/target-cpu.txt" 2>/dev/null)
  [ "${LAB_SYSPROF:-0}" = "$r" ] && touch "$LAB_OUT/tprof.stop"
  sysprof_stop
  if [ "${LAB_SYSPROF:-0}" = "$r" ]; then
    # the target's report is written before the next job starts
    for _ in $(seq 1200); do [ -e "$LAB_OUT/tprof.stop" ] || break; nap 0.1; done
    [ -e "$LAB_OUT/tprof.stop" ] && fail "target did not finish its profile of $label in 120 s"
  fi
  if [ -n "$tc0" ] && [ -n "$tc1" ]; then
    result "$label.tbusy_j" $(( ${tc1% *} - ${tc0% *} )); result "$label.tproc_j" $(( ${tc1#* } - ${tc0#* } ))
  fi
  [ -n "$apid" ] && result "$label.threads" "$(thread_delta "$th0" "$(thread_snap "$apid")")"
  result "$label.ctxt" $((x1 - x0))
  result "$label.busy_j" $((b1 - b0))
  result "$label.proc_j" $((a1 - a0))
  result "$label.wall_s" "$(since "$t0")"
}

read -ra C <<< "$CFGS"; n=${#C[@]}
half=$(( $(numfmt --from=iec "$VS") / 2 ))
for r in $(seq "$ROUNDS"); do
  order=(); for ((i = 0; i < n; i++)); do order+=("${C[(r - 1 + i) % n]}"); done
  result "fe.order.r$r" "$(echo "${order[@]}" | tr ' ' ',')"
  for c in "${order[@]}"; do
    step "round $r: $c"
    clean "r$r.before.$c"
    if ! up "$c" "$r"; then fail "connect $c (round $r)"; down "$c"; clean "r$r.after.$c"; continue; fi
    p=fe.$c
    job "$p.rr32.r$r" "$DEV" randread  4k 32 2 --time_based --runtime="$FT" --size=1G
    job "$p.rw32.r$r" "$DEV" randwrite 4k 32 2 --time_based --runtime="$FT" --size=1G
    if [ "$r" = 1 ]; then
      perf_fio "$p.verify" "$DEV" randwrite 4k 32 2 --size="$half" --offset_increment=512M \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0
    fi
    down "$c" || fail "disconnect $c (round $r)"
    clean "r$r.after.$c"
  done
done
rdma statistic show link rxe0/1
dmesg_check
[ "$FAILS" = 0 ]
