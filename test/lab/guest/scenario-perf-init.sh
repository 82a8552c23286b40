#!/bin/bash
# perf scenario, host VM: the kernel nvme-rdma host (nvme-tcp with lab.transport=tcp, run.sh
# perf-tcp) against each target the target VM announces
# (serve.N, see scenario-perf-target.sh): connect, 10 s connected but idle, then fio (libaio,
# direct, lab.fiotime s each): 4 KiB randread and randwrite at QD1 (1 job) and QD32 (2 jobs),
# 128 KiB sequential read at QD8; in round 1 also a crc32c verify over lab.verifysize (64M).
# Each job is bracketed by job.N.NAME.start/.go/.end so the target VM measures its CPU time.
# RESULT lines: perf.IMPL.BACKING.JOB.rROUND.{iops,ios,p50_us,p99_us,err}.
. /mnt/share/scripts/lib.sh
P=${LAB_PEER:?lab.peer=IP}; NQN=nqn.2026-11.io.rdmablk:perf; FT=${LAB_FIOTIME:-15}
VS=${LAB_VERIFYSIZE:-64M}; TR=${LAB_TRANSPORT:-rdma}
trap 'touch "$LAB_OUT/init.done"' EXIT
case $TR in rdma|tcp) ;; *) fail "lab.transport=$TR: want rdma or tcp"; exit 1 ;; esac
net_up
if [ "$TR" = rdma ]; then rxe_up || exit 1; fi
run modprobe "nvme-$TR" || exit 1
wait_file "$LAB_OUT/serve.1" 900 || { fail "target VM never served"; exit 1; }
run ping -c 2 -W 5 "$P" || fail "ping $P"
# bracket N NAME CMD...: the target VM samples its CPU around CMD
bracket() {
  local n=$1 name=$2 j; shift 2; j=$LAB_OUT/job.$n.$name
  touch "$j.start"; wait_file "$j.go" 120 || fail "target did not answer $j"
  rxe_counters > "$j.hrxe0"
  "$@"; local rc=$?
  # the host's rxe counters over the job (next to the target's $j.rxe)
  rxe_counters | paste -d' ' - "$j.hrxe0" | awk '$1 == $3 && $2 != $4 {print $1, $2 - $4}' > "$j.hrxe"
  touch "$j.end"; wait_file "$j.cpu" 120 || fail "no cpu figure for $j"
  return $rc
}
n=1
while :; do
  while [ ! -e "$LAB_OUT/serve.$n" ] && [ ! -e "$LAB_OUT/perf.end" ]; do nap 0.1; done
  [ -e "$LAB_OUT/serve.$n" ] || break
  read -r r b impl < "$LAB_OUT/serve.$n"
  step "target $n: round $r, $b, $impl"
  p=perf.$impl.$b
  before=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$')
  t0=$(ts)
  if run nvme connect -t "$TR" -n "$NQN" -a "$P" -s 4420; then
    result "$p.connect_s.r$r" "$(since "$t0")"
    NDEV=
    for _ in $(seq 100); do
      NDEV=$(ls /dev/ | grep -E '^nvme[0-9]+n[0-9]+$' | grep -vxF "$before" | head -1); [ -n "$NDEV" ] && break; sleep 0.1
    done
    NDEV=/dev/$NDEV
    bracket $n idle.r$r sleep 10
    bracket $n rr1.r$r   perf_fio "$p.rr1.r$r"   "$NDEV" randread  4k   1  1 --time_based --runtime="$FT" --size=1G
    bracket $n rr32.r$r  perf_fio "$p.rr32.r$r"  "$NDEV" randread  4k   32 2 --time_based --runtime="$FT" --size=1G
    bracket $n rw1.r$r   perf_fio "$p.rw1.r$r"   "$NDEV" randwrite 4k   1  1 --time_based --runtime="$FT" --size=1G
    bracket $n rw32.r$r  perf_fio "$p.rw32.r$r"  "$NDEV" randwrite 4k   32 2 --time_based --runtime="$FT" --size=1G
    bracket $n sr128.r$r perf_fio "$p.sr128.r$r" "$NDEV" read      128k 8  1 --time_based --runtime="$FT" --size=1G
    if [ "$r" = 1 ]; then
      perf_fio "$p.verify" "$NDEV" randwrite 4k 16 1 --size="$VS" --verify=crc32c --do_verify=1 \
        --verify_fatal=1 --verify_state_save=0
    fi
    run nvme disconnect -n "$NQN" || fail "nvme disconnect ($impl)"
  else fail "nvme connect ($impl, round $r, $b)"; fi
  touch "$LAB_OUT/serve.$n.done"
  n=$((n + 1))
done
dmesg_check
[ "$FAILS" = 0 ]
