#!/bin/bash
# Scenario 4, target VM: rdmablkd on lab.ip (rxe0 on eth0, /dev/ram1 1 GiB); writes
# $LAB_OUT/target.ready, serves until the initiator VM writes $LAB_OUT/initiator.done (at most
# lab.wait s, 900), then stops rdmablkd and checks dmesg. Samples its CPU into target-cpu.txt.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; W=${LAB_WAIT:-900}
net_up; rxe_up || exit 1
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1
mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
transport: {provider: auto, max_queue_depth: 128}
listeners: [{addr: "$IP:4420"}]
volumes: [{name: ram1, path: /dev/ram1, block_size: 512}]
subsystems:
  - nqn: nqn.2026-11.io.rdmablk:lab
    serial: rdmablklab01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram1}]
EOC
"$D" --config /tmp/rd/rdmablkd.yaml > "$LAB_OUT/twovm-rdmablkd.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do grep -qi 'listen' "$LAB_OUT/twovm-rdmablkd.log" && break; sleep 0.1; done
cat "$LAB_OUT/twovm-rdmablkd.log"
grep -q 'provider=ibverbs' "$LAB_OUT/twovm-rdmablkd.log" || fail "rdmablkd did not choose ibverbs"
# This guest's CPU, sampled every 0.25 s into target-cpu.txt ("BUSY_JIFFIES RDMABLKD_JIFFIES" per
# line, newest last) for the initiator VM to read around its jobs (the frontends scenario's target
# CPU per I/O); no process is spawned per sample.
# The same loop profiles this guest on the initiator's request (its lab.sysprof round): it starts
# lib.sh's sysprof_start "target.LABEL" when $LAB_OUT/tprof.start (holding LABEL) appears, answers
# with tprof.started, and stops when tprof.stop appears (the files are removed as they are taken).
exec {SLEEPFD}<> <(:)
( while :; do
    read -r _ u n s _ _ irq sirq _ < /proc/stat
    read -r -a p < "/proc/$DPID/stat" 2>/dev/null || p=()
    echo "$((u + n + s + irq + sirq)) $(( ${p[13]:-0} + ${p[14]:-0} ))"
    if [ -e "$LAB_OUT/tprof.start" ]; then
      sysprof_start "target.$(cat "$LAB_OUT/tprof.start")"; rm -f "$LAB_OUT/tprof.start"
      touch "$LAB_OUT/tprof.started"
    fi
    if [ -e "$LAB_OUT/tprof.stop" ]; then sysprof_stop; rm -f "$LAB_OUT/tprof.stop"; fi
    read -r -t 0.25 -u "$SLEEPFD" _
  done >> "$LAB_OUT/target-cpu.txt" ) &
SAMPLER=$!
echo "$IP" > "$LAB_OUT/target.ready"; step "target ready"
for _ in $(seq "$W"); do [ -e "$LAB_OUT/initiator.done" ] && break; nap 1; done
[ -e "$LAB_OUT/initiator.done" ] || fail "initiator VM did not finish in ${W}s"
kill "$SAMPLER" 2>/dev/null
kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $?"
tail -5 "$LAB_OUT/twovm-rdmablkd.log"
rdma statistic show link rxe0/1
dmesg_check
[ "$FAILS" = 0 ]
