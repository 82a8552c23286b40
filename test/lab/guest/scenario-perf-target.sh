#!/bin/bash
# perf scenario, target VM: serves the same backing alternately from rdmablkd and from kernel
# nvmet-rdma (same NQN, same address and port, so the host VM does the same thing to both), for
# lab.rounds rounds over each backing in lab.backings (brd: 1 GiB RAM disk, null: 1 GiB
# memory-backed null_blk). Order per round: A B in odd rounds, B A in even ones (lab.order=abab
# keeps A B), A = rdmablkd. For every fio job the host VM announces, it samples this guest's busy
# CPU time (/proc/stat) and rdmablkd's own, and writes RESULT lines. Protocol (files in $LAB_OUT):
#   serve.N            "ROUND BACKING IMPL": target N is up (written here)
#   serve.N.done       the host VM is finished with target N (written there)
#   job.N.NAME.start   the host VM is about to start job NAME (there); job.N.NAME.go (here)
#   job.N.NAME.end     the job finished (there); job.N.NAME.cpu (here): "BUSY_JIFFIES DAEMON_JIFFIES";
#                      job.N.NAME.net (here): "TX_PACKETS RX_PACKETS" of eth0 over the job;
#                      job.N.NAME.threads (here, rdmablkd only): its busiest threads (lib.sh thread_delta)
#   perf.end           no more targets (here)
#   transport          "rdma" or "tcp" (here, at start; perfreport labels the tables with it)
#   versus             only with lab.vs=base: "new LABEL" and "base LABEL" lines, the builds'
#                      bin/build-info and bin/build-info-base (here, at start; perfreport labels
#                      the A/B tables with them)
# lab.transport=tcp (run.sh perf-tcp): the same over NVMe/TCP: rdmablkd's `transport: tcp` listener
# (provider soft, no rxe in either guest) against nvmet-tcp, on the same address and port 4420.
# lab.vs=base (run.sh BASELINE=REV): an A/B of two rdmablkd builds instead: impl "kernel" (B) is
# /mnt/share/bin/rdmablkd-base (built from REV) with the same configuration as A, not nvmet; its
# log and CPU profile are rdmablkd-base-N.{log,pprof}, next to A's rdmablkd-N.{log,pprof}.
# lab.aenv=K=V,K=V / lab.benv=...: environment of rdmablkd A (ours) / of the baseline B (lab.vs=base;
# with BASELINE=HEAD an A/B of two settings of one build).
# lab.sysprof=R: in round R, a system-wide profile of this guest around each job (lib.sh
# sysprof_start: sys-target.BACKING.IMPL.JOB.rR.* in the run's out directory).
# lab.pprof=R: rdmablkd writes a Go CPU profile in round R ($NAME-SEQ.pprof); in no round by
# default, since nvmet runs without one: the profiler's signals and stack walks cost rdmablkd about
# 1,300 guest instructions per QD1 NVMe/TCP command (run 2026-12-07-0040, INSNS=1), 2 % of its total.
# lab.insns=1 (run.sh INSNS=1, which boots this guest with the insncount QEMU plugin): marks around
# every job in $LAB_OUT/insn (lib.sh insn_mark), labelled "TARGET.JOB-BACKING.rR start|end" with
# the job's commands (from the host VM's fio output) at the end, for test/lab/probes/insncount/analyze.py.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; NQN=nqn.2026-11.io.rdmablk:perf
ROUNDS=${LAB_ROUNDS:-3}; BACKINGS=${LAB_BACKINGS:-brd,null}; ORDER=${LAB_ORDER:-abba}
HZ=$(getconf CLK_TCK); TR=${LAB_TRANSPORT:-rdma}
case $TR in rdma|tcp) ;; *) fail "lab.transport=$TR: want rdma or tcp"; exit 1 ;; esac
echo "$TR" > "$LAB_OUT/transport"
VS=${LAB_VS:-nvmet}
case $VS in
  nvmet) ;;
  base)
    [ -x "$D-base" ] || { fail "lab.vs=base: no $D-base (run.sh BASELINE=REV builds it)"; exit 1; }
    printf 'new %s\nbase %s\n' "$(head -1 /mnt/share/bin/build-info 2>/dev/null || echo unknown)" \
      "$(head -1 /mnt/share/bin/build-info-base 2>/dev/null || echo unknown)" > "$LAB_OUT/versus" ;;
  *) fail "lab.vs=$VS: want nvmet or base"; exit 1 ;;
esac
net_up
if [ "$TR" = rdma ]; then rxe_up || exit 1; fi
run modprobe brd rd_nr=1 rd_size=1048576 || exit 1
NULLB=$(nullb_up 1024) || fail "null_blk"
mkdir -p /tmp/rd
echo "$HZ" > "$LAB_OUT/target.hz"
INSN=
if [ "${LAB_INSNS:-0}" = 1 ]; then INSN=$LAB_OUT/insn; mkdir -p "$INSN"; cat /proc/kallsyms > "$INSN/kallsyms"; fi
# insn_job start|end IMPL BACKING JOB: the plugin's mark around a job (lab.insns=1)
insn_job() {
  [ -n "$INSN" ] || return 0
  local t=rdmablkd n f; [ "$2" = kernel ] && t=nvmet
  [ "$2" = kernel ] && [ "$VS" = base ] && t=base
  insn_mark "$INSN" "$t.${4%%.*}-$3.${4#*.} $1" 0
  # the job's commands, after the dump: python's start-up must not be in the window; analyze.py
  # takes a mark's last line
  if [ "$1" = end ]; then
    f=$LAB_OUT/fio-perf.$2.$3.${4}.json
    n=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs'][0]; print(j['read']['total_ios']+j['write']['total_ios'])" "$f" 2>/dev/null || echo 0)
    echo "$INSN_K $t.${4%%.*}-$3.${4#*.} $1 $n" >> "$INSN/marks"
  fi
}
start_ours() { # DEV [BINARY [NAME [ENV]]]: rdmablkd (or BINARY) serving DEV, with ENV (K=V,K=V); log and profile $LAB_OUT/NAME-$SEQ.*
  local bin=${2:-$D} name=${3:-rdmablkd} envs=${4:-}
  # over NVMe/TCP the verbs provider serves no listener: soft, so that nothing probes for a device
  local prov=auto; [ "$TR" = tcp ] && prov=soft
  cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: $prov${LAB_POLLSPINS:+, poll_spins: $LAB_POLLSPINS}${LAB_POLLWAIT:+, poll_wait: $LAB_POLLWAIT}${LAB_MDTS:+, max_data_transfer: $LAB_MDTS}${LAB_TCPSPINS:+, tcp_poll_spins: $LAB_TCPSPINS}${LAB_TCPZCMIN:+, tcp_zero_copy_send_min: $LAB_TCPZCMIN}}
listeners: [{addr: "$IP:4420", transport: $TR}]
volumes: [{name: vol, path: $1, block_size: 512}]
subsystems:
  - nqn: $NQN
    serial: rdmablkperf01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: vol}]
EOC
  DNAME=$name DLOG=$LAB_OUT/$name-$SEQ.log
  local prof=(); [ "${LAB_PPROF:-0}" = "$r" ] && prof=(--cpuprofile "$LAB_OUT/$name-$SEQ.pprof")
  env ${envs//,/ } "$bin" --config /tmp/rd/rdmablkd.yaml "${prof[@]}" > "$DLOG" 2>&1 &
  DPID=$!
  for _ in $(seq 200); do grep -q -i 'listen' "$DLOG" && break; sleep 0.1; done
  [ -n "$INSN" ] && cat "/proc/$DPID/maps" > "$INSN/rdmablkd.maps"
  if [ "$TR" = rdma ]; then
    grep -q 'provider=ibverbs' "$DLOG" || { cat "$DLOG"; fail "$name did not choose ibverbs"; }
  else
    grep -q 'transport=tcp' "$DLOG" || { cat "$DLOG"; fail "$name did not listen on NVMe/TCP"; }
  fi
}
stop_ours() { local rc; kill -TERM "$DPID"; wait "$DPID"; rc=$?; echo "$DNAME exit code $rc"; tail -3 "$DLOG"; DPID=; }
# impl "kernel" (B): nvmet, or with lab.vs=base the baseline rdmablkd
start_b() { # DEV
  if [ "$VS" = base ]; then start_ours "$1" "$D-base" rdmablkd-base "${LAB_BENV:-}"
  else nvmet_up "$NQN" "$1" "$IP" 4420 "$TR" || fail "nvmet_up"; fi
}
stop_b() { if [ "$VS" = base ]; then stop_ours; else nvmet_down "$NQN"; fi; }
SEQ=0
for r in $(seq "$ROUNDS"); do
  for b in ${BACKINGS//,/ }; do
    case $b in brd) DEV=/dev/ram0 ;; null) DEV=$NULLB ;; *) fail "backing $b"; continue ;; esac
    order="ours kernel"
    [ "$ORDER" = abba ] && [ $((r % 2)) = 0 ] && order="kernel ours"
    for impl in $order; do
      SEQ=$((SEQ + 1)); DPID=
      step "target $SEQ: round $r, $b ($DEV), $impl"
      if [ $impl = ours ]; then start_ours "$DEV" "$D" rdmablkd "${LAB_AENV:-}"; else start_b "$DEV"; fi
      echo "$r $b $impl" > "$LAB_OUT/serve.$SEQ"
      # answer job announcements until the host VM is done with this target
      while [ ! -e "$LAB_OUT/serve.$SEQ.done" ]; do
        for s in "$LAB_OUT"/job.$SEQ.*.start; do
          [ -e "$s" ] || continue
          j=${s%.start}; [ -e "$j.go" ] && continue
          # The snapshots first, the busy-time readings last: the window must not hold the
          # snapshots' own processes (rdmablkd's per-thread one, taken for ours only, costs the
          # TCG guest about 0.8 CPU-seconds: run 2026-12-06-1125's idle rows, 11.8 % vs 4.1 %).
          rxe_counters > "$j.rxe0"
          n0=$(net_packets); th0=; [ -n "$DPID" ] && th0=$(thread_snap "$DPID")
          [ "${LAB_SYSPROF:-0}" = "$r" ] && sysprof_start "target.$b.$impl.${j##*/job.$SEQ.}.r$r"
          insn_job start "$impl" "$b" "${j##*/job.$SEQ.}"
          d0=0; [ -n "$DPID" ] && d0=$(proc_cpu "$DPID"); b0=$(cpu_busy)
          touch "$j.go"
          wait_file "$j.end" 900 || { fail "job $j never ended"; break; }
          b1=$(cpu_busy); d1=0; [ -n "$DPID" ] && d1=$(proc_cpu "$DPID")
          sysprof_stop
          insn_job end "$impl" "$b" "${j##*/job.$SEQ.}"
          echo "$((b1 - b0)) $((d1 - d0))" > "$j.cpu"
          [ -n "$DPID" ] && thread_delta "$th0" "$(thread_snap "$DPID")" > "$j.threads"
          n1=$(net_packets); echo "${n1% *} ${n0% *} ${n1#* } ${n0#* }" | awk '{print $1 - $2, $3 - $4}' > "$j.net"
          # rxe's counters over the job (retransmissions, RNR NAKs, sequence errors): "name delta"
          rxe_counters | paste -d' ' - "$j.rxe0" | awk '$1 == $3 && $2 != $4 {print $1, $2 - $4}' > "$j.rxe"
        done
        nap 0.1
      done
      if [ $impl = ours ]; then stop_ours; else stop_b; fi
    done
  done
done
touch "$LAB_OUT/perf.end"
dmesg_check
[ "$FAILS" = 0 ]
