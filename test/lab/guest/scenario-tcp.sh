#!/bin/bash
# Scenario tcp (issue 14): NVMe/TCP. In one guest, over loopback: rdmablkd serving /dev/ram1 (1 GiB
# brd) on `transport: tcp` listeners 127.0.0.1:4420 and 127.0.0.1:8009 (discovery), and the kernel's
# nvmet-tcp serving /dev/ram0 on 127.0.0.1:4421. The kernel nvme-tcp host: discover, connect,
# list, fio 4 KiB randread/randwrite QD16/QD32 and a crc32c verify over $LAB_VERIFYSIZE, disconnect;
# connect again with --hdr-digest --data-digest and repeat randread QD32 + the verify; then
# $LAB_ROUNDS interleaved rounds (rdmablkd then nvmet in odd rounds, nvmet first in even ones) of
# randread/randwrite QD32 against each target for the side-by-side ratio. Host and targets share
# the guest's one vCPU, so only the IOPS ratio is reported, no CPU per I/O. Then our initiator over
# NVMe/TCP (rdmablk -t tcp): discover and 64 MiB write/read/cmp against nvmet-tcp (plain and with
# digests), and rdmablk bench randread/randwrite QD32 against nvmet-tcp and rdmablkd. dmesg must stay clean.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; NQN=nqn.2026-11.io.rdmablk:tcp; KNQN=nqn.2026-11.io.kernel:tcp
FT=${LAB_FIOTIME:-15}; ROUNDS=${LAB_ROUNDS:-3}; L=127.0.0.1
net_up
run modprobe brd rd_nr=2 rd_size=1048576 || exit 1
run modprobe nvme-tcp || exit 1
mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
listeners:
  - {addr: "$L:4420", transport: tcp}
  - {addr: "$L:8009", transport: tcp}
volumes: [{name: ram1, path: /dev/ram1, block_size: 512}]
subsystems:
  - nqn: $NQN
    serial: rdmablktcp01
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram1}]
EOC
"$D" --config /tmp/rd/rdmablkd.yaml > "$LAB_OUT/tcp-rdmablkd.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do grep -q 'rdmablkd ready' "$LAB_OUT/tcp-rdmablkd.log" && break; sleep 0.1; done
cat "$LAB_OUT/tcp-rdmablkd.log"
grep -q 'rdmablkd ready' "$LAB_OUT/tcp-rdmablkd.log" || { fail "rdmablkd did not start"; exit 1; }

# ndev: the namespace block device of the one connected controller.
ndev() { local d; for _ in $(seq 100); do d=$(ls /dev/nvme*n1 2>/dev/null | head -1); [ -b "$d" ] && { echo "$d"; return; }; sleep 0.1; done; }
# tconnect NQN PORT [args]: nvme connect -t tcp; echoes the device.
tconnect() { local n=$1 p=$2; shift 2; run nvme connect -t tcp -n "$n" -a "$L" -s "$p" "$@" >&2 || return 1; ndev; }

step "discovery over TCP (port 8009)"
if run nvme discover -t tcp -a "$L" -s 8009 > "$LAB_OUT/tcp-discover.txt"; then
  cat "$LAB_OUT/tcp-discover.txt"
  grep -q "$NQN" "$LAB_OUT/tcp-discover.txt" && result tcp.discover ok || { result tcp.discover missing; fail "discovery log lacks $NQN"; }
else result tcp.discover failed; fail "nvme discover -t tcp"; fi

step "kernel nvme-tcp host -> rdmablkd, no digests"
t0=$(ts)
if DEV=$(tconnect "$NQN" 4420) && [ -b "$DEV" ]; then
  result tcp.connect_s "$(since "$t0")"
  run nvme list
  nvme list 2>/dev/null | grep -q "$DEV" && result tcp.list ok || result tcp.list missing
  fio_suite tcp "$DEV"
  run nvme disconnect -n "$NQN" || fail "nvme disconnect"
else fail "nvme connect -t tcp"; fi

step "reconnect with --hdr-digest --data-digest"
if DEV=$(tconnect "$NQN" 4420 --hdr-digest --data-digest) && [ -b "$DEV" ]; then
  result tcp.digest.connect ok
  fio_job tcp.digest.randread.qd32 "$DEV" randread 32 --time_based --runtime="$FT" --size=768M
  fio_job tcp.digest.verify "$DEV" randwrite 16 --size="${LAB_VERIFYSIZE:-128M}" --verify=crc32c \
      --do_verify=1 --verify_fatal=1 --verify_state_save=0
  run nvme disconnect -n "$NQN" || fail "nvme disconnect (digests)"
else result tcp.digest.connect failed; fail "nvme connect -t tcp with digests"; fi

step "kernel nvmet-tcp on $L:4421 (/dev/ram0)"
C=/sys/kernel/config/nvmet
run modprobe nvmet; run modprobe nvmet-tcp
mkdir $C/subsystems/$KNQN && echo 1 > $C/subsystems/$KNQN/attr_allow_any_host
mkdir $C/subsystems/$KNQN/namespaces/1 && echo -n /dev/ram0 > $C/subsystems/$KNQN/namespaces/1/device_path
echo 1 > $C/subsystems/$KNQN/namespaces/1/enable || fail "nvmet namespace enable"
mkdir $C/ports/2
echo tcp > $C/ports/2/addr_trtype; echo ipv4 > $C/ports/2/addr_adrfam
echo "$L" > $C/ports/2/addr_traddr; echo 4421 > $C/ports/2/addr_trsvcid
ln -s $C/subsystems/$KNQN $C/ports/2/subsystems/$KNQN || fail "nvmet port link"

# side TARGET ROUND: one target's jobs in one round.
side() {
  local t=$1 r=$2 n=$NQN p=4420 dev
  [ "$t" = kernel ] && { n=$KNQN; p=4421; }
  if dev=$(tconnect "$n" "$p") && [ -b "$dev" ]; then
    fio_job "tcpside.$t.randread.qd32.r$r" "$dev" randread 32 --time_based --runtime="$FT" --size=768M
    fio_job "tcpside.$t.randwrite.qd32.r$r" "$dev" randwrite 32 --time_based --runtime="$FT" --size=768M
    run nvme disconnect -n "$n" || fail "nvme disconnect $t"
  else fail "nvme connect -t tcp to $t"; fi
}
for r in $(seq "$ROUNDS"); do
  step "side by side, round $r"
  if [ $((r % 2)) = 1 ]; then side ours "$r"; side kernel "$r"; else side kernel "$r"; side ours "$r"; fi
done
step "our initiator (rdmablk -t tcp) -> kernel nvmet-tcp, and -> rdmablkd over TCP"
B=/mnt/share/bin/rdmablk
jnum() { awk -v k="\"$2\":" '$1==k {gsub(",","",$2); print $2; exit}' "$1"; }
if run "$B" discover -t tcp -a "$L" -s 4421 > "$LAB_OUT/init-tcp-discover.txt"; then
  cat "$LAB_OUT/init-tcp-discover.txt"
  grep -q "$KNQN" "$LAB_OUT/init-tcp-discover.txt" && result tcp.init.discover ok || result tcp.init.discover missing
else result tcp.init.discover failed; fail "rdmablk discover -t tcp (nvmet)"; fi
head -c 64M /dev/urandom > /tmp/rand.bin
for v in plain digests; do
  R=("$B" -t tcp -a "$L" -s 4421 -n "$KNQN")
  [ $v = digests ] && R+=(--hdr-digest --data-digest)
  rm -f /tmp/back.bin
  if run "${R[@]}" write --offset 1M -i /tmp/rand.bin && run "${R[@]}" read --offset 1M --length 64M -o /tmp/back.bin &&
     cmp /tmp/rand.bin /tmp/back.bin; then result "tcp.init.kernel.$v.verify" ok
  else result "tcp.init.kernel.$v.verify" FAILED; fail "rdmablk -t tcp write/read/cmp against nvmet-tcp ($v)"; fi
done
for t in kernel ours; do
  n=$KNQN; p=4421; [ $t = ours ] && { n=$NQN; p=4420; }
  for rw in read write; do
    f=$LAB_OUT/init-tcp-$t-rand$rw.json
    run "$B" -t tcp -a "$L" -s "$p" -n "$n" --json bench -q --rw $rw --pattern rand --bs 4k --qd 32 --jobs 1 \
      --runtime "${FT}s" --size 768M > "$f" 2> "$f.err" || fail "rdmablk bench -t tcp $t rand$rw: $(tail -1 "$f.err")"
    result "tcp.init.$t.rand$rw.iops" "$(jnum "$f" iops | awk '{printf "%.0f", $1}')"
    result "tcp.init.$t.rand$rw.errors" "$(jnum "$f" errors)"
  done
done
rm $C/ports/2/subsystems/$KNQN; rmdir $C/ports/2
echo 0 > $C/subsystems/$KNQN/namespaces/1/enable; rmdir $C/subsystems/$KNQN/namespaces/1 $C/subsystems/$KNQN

kill -TERM "$DPID"; wait "$DPID"; echo "rdmablkd exit code $?"
tail -5 "$LAB_OUT/tcp-rdmablkd.log"
dmesg_check
[ "$FAILS" = 0 ]
