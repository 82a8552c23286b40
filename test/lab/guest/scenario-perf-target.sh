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
#   job.N.NAME.end     the job finished (there); job.N.NAME.cpu (here): "BUSY_JIFFIES DAEMON_JIFFIES"
#   perf.end           no more targets (here)
#   transport          "rdma" or "tcp" (here, at start; perfreport labels the tables with it)
# lab.transport=tcp (run.sh perf-tcp): the same over NVMe/TCP: rdmablkd's `transport: tcp` listener
# (provider soft, no rxe in either guest) against nvmet-tcp, on the same address and port 4420.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; NQN=nqn.2026-11.io.rdmablk:perf
ROUNDS=${LAB_ROUNDS:-3}; BACKINGS=${LAB_BACKINGS:-brd,null}; ORDER=${LAB_ORDER:-abba}
HZ=$(getconf CLK_TCK); TR=${LAB_TRANSPORT:-rdma}
case $TR in rdma|tcp) ;; *) fail "lab.transport=$TR: want rdma or tcp"; exit 1 ;; esac
echo "$TR" > "$LAB_OUT/transport"
net_up
if [ "$TR" = rdma ]; then rxe_up || exit 1; fi
run modprobe brd rd_nr=1 rd_size=1048576 || exit 1
NULLB=$(nullb_up 1024) || fail "null_blk"
mkdir -p /tmp/rd
echo "$HZ" > "$LAB_OUT/target.hz"
start_ours() { # DEV
  # over NVMe/TCP the verbs provider serves no listener: soft, so that nothing probes for a device
  local prov=auto; [ "$TR" = tcp ] && prov=soft
  cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
log: {level: info}
transport: {provider: $prov${LAB_POLLSPINS:+, poll_spins: $LAB_POLLSPINS}${LAB_POLLWAIT:+, poll_wait: $LAB_POLLWAIT}${LAB_MDTS:+, max_data_transfer: $LAB_MDTS}}
listeners: [{addr: "$IP:4420", transport: $TR}]
volumes: [{name: vol, path: $1, block_size: 512}]
subsystems:
  - nqn: $NQN
    serial: rdmablkperf01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: vol}]
EOC
  "$D" --config /tmp/rd/rdmablkd.yaml --cpuprofile "$LAB_OUT/rdmablkd-$SEQ.pprof" > "$LAB_OUT/rdmablkd-$SEQ.log" 2>&1 &
  DPID=$!
  for _ in $(seq 200); do grep -q -i 'listen' "$LAB_OUT/rdmablkd-$SEQ.log" && break; sleep 0.1; done
  if [ "$TR" = rdma ]; then
    grep -q 'provider=ibverbs' "$LAB_OUT/rdmablkd-$SEQ.log" || { cat "$LAB_OUT/rdmablkd-$SEQ.log"; fail "rdmablkd did not choose ibverbs"; }
  else
    grep -q 'transport=tcp' "$LAB_OUT/rdmablkd-$SEQ.log" || { cat "$LAB_OUT/rdmablkd-$SEQ.log"; fail "rdmablkd did not listen on NVMe/TCP"; }
  fi
}
stop_ours() { kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $?"; tail -3 "$LAB_OUT/rdmablkd-$SEQ.log"; DPID=; }
SEQ=0
for r in $(seq "$ROUNDS"); do
  for b in ${BACKINGS//,/ }; do
    case $b in brd) DEV=/dev/ram0 ;; null) DEV=$NULLB ;; *) fail "backing $b"; continue ;; esac
    order="ours kernel"
    [ "$ORDER" = abba ] && [ $((r % 2)) = 0 ] && order="kernel ours"
    for impl in $order; do
      SEQ=$((SEQ + 1)); DPID=
      step "target $SEQ: round $r, $b ($DEV), $impl"
      if [ $impl = ours ]; then start_ours "$DEV"; else nvmet_up "$NQN" "$DEV" "$IP" 4420 "$TR" || fail "nvmet_up"; fi
      echo "$r $b $impl" > "$LAB_OUT/serve.$SEQ"
      # answer job announcements until the host VM is done with this target
      while [ ! -e "$LAB_OUT/serve.$SEQ.done" ]; do
        for s in "$LAB_OUT"/job.$SEQ.*.start; do
          [ -e "$s" ] || continue
          j=${s%.start}; [ -e "$j.go" ] && continue
          b0=$(cpu_busy); d0=0; [ -n "$DPID" ] && d0=$(proc_cpu "$DPID")
          rxe_counters > "$j.rxe0"
          touch "$j.go"
          wait_file "$j.end" 900 || { fail "job $j never ended"; break; }
          b1=$(cpu_busy); d1=0; [ -n "$DPID" ] && d1=$(proc_cpu "$DPID")
          echo "$((b1 - b0)) $((d1 - d0))" > "$j.cpu"
          # rxe's counters over the job (retransmissions, RNR NAKs, sequence errors): "name delta"
          rxe_counters | paste -d' ' - "$j.rxe0" | awk '$1 == $3 && $2 != $4 {print $1, $2 - $4}' > "$j.rxe"
        done
        nap 0.1
      done
      if [ $impl = ours ]; then stop_ours; else nvmet_down "$NQN"; fi
    done
  done
done
touch "$LAB_OUT/perf.end"
dmesg_check
[ "$FAILS" = 0 ]
