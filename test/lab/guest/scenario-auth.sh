#!/bin/bash
# Scenario auth (issue 15): NVMe in-band authentication (DH-HMAC-CHAP) against Linux, in one
# guest over rxe (needs the 6.12 kernel: Debian's 6.1 is built without CONFIG_NVME_AUTH).
#  1. nvme-cli secret vectors: gen-dhchap-key with fixed secrets (hmac 0..3) and check-dhchap-key
#     on good and corrupted strings -> $LAB_OUT/kernel-6.12-nvme-cli.json (nvme/auth/testdata).
#  2. rdmablkd (rdma, $IP:4420) with one subsystem per (hash, DH group) case, each allowing only
#     that hash and group and requiring authentication; target.dhchap_transcript records every
#     queue's first transaction. The kernel nvme-rdma host connects to each with --dhchap-secret
#     (and --dhchap-ctrl-secret where bidirectional): connect ok and a 1 MiB read each; on the
#     null/SHA-256 and the bidirectional ffdhe2048/SHA-512 subsystems a crc32c verify over
#     $LAB_VERIFYSIZE (err=0). The transcripts (Linux's replies checked by our code on replay) ->
#     $LAB_OUT/transcripts-6.12-rdma.jsonl.
#  3. Refusals: a wrong host secret, a missing secret, a wrong controller secret: connect must fail;
#     what the kernel logs is kept (RESULT auth.refused.* and the dmesg lines).
#  4. Our initiator (rdmablk) against kernel nvmet-rdma configured through configfs with
#     dhchap_key/dhchap_ctrl_key/hash/dhgroup: 16 MiB write, read back, cmp byte-exact,
#     unidirectional (hmac(sha256), null) and bidirectional (hmac(sha384), ffdhe3072), over RDMA and
#     over NVMe/TCP (nvmet-tcp on $IP:4431); and the kernel nvme-tcp host to rdmablkd's TCP listener.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; B=/mnt/share/bin/rdmablk
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:0c5e1d8a-6f5e-4d6b-9d35-8f2f5a4c1b21
HOSTID=0c5e1d8a-6f5e-4d6b-9d35-8f2f5a4c1b21
PFX=nqn.2024-01.io.rdmablk:auth; KNQN=nqn.2024-01.io.kernel:auth
VS=${LAB_VERIFYSIZE:-64M}
DMESG_START=$(dmesg | wc -l)
net_up; rxe_up || exit 1
run modprobe nvme-rdma || exit 1
run modprobe nvme-tcp || exit 1
run modprobe brd rd_nr=1 rd_size=262144 || exit 1
C=/sys/kernel/config/nvmet
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
run nvme --version | tee "$LAB_OUT/nvme-version.txt"
KVER=$(uname -r); CLIVER=$(nvme --version | awk '/nvme version/ {print $3; exit}')
grep -q '^CONFIG_NVME_AUTH=' "/boot/config-$KVER" 2>/dev/null && result auth.kernel_config "$(grep -E '^CONFIG_NVME_(TARGET_)?AUTH=' "/boot/config-$KVER" | tr '\n' ' ')"

step "nvme-cli secret vectors (gen-dhchap-key / check-dhchap-key)"
J=$LAB_OUT/kernel-6.12-nvme-cli.json
{
  echo "{\"source\": \"nvme-cli $CLIVER on Linux $KVER, rdmablk lab scenario auth, $(date -u +%Y-%m-%d)\","
  echo " \"nvme_cli_gen\": ["
  first=1
  for L in 32 48 64; do
    sec=$(head -c "$L" /dev/urandom | od -An -tx1 | tr -d ' \n')
    for h in 0 1 2 3; do
      out=$(nvme gen-dhchap-key --secret="$sec" --hmac=$h --key-length=$L --nqn="$HOSTNQN" 2>/dev/null) || continue
      [ $first = 1 ] || echo ","
      first=0
      printf '  {"secret_hex": "%s", "hmac": %d, "key_length": %d, "nqn": "%s", "output": "%s"}' "$sec" "$h" "$L" "$HOSTNQN" "$out"
    done
  done
  echo; echo " ],"
  echo " \"nvme_cli_check\": ["
  good=$(nvme gen-dhchap-key --hmac=2 --nqn="$HOSTNQN")
  body=${good#DHHC-1:02:}; body=${body%:}
  # corrupted: one base64 letter changed (first letter A<->B), a wrong <hh>, a truncated string
  case "$body" in A*) bad1="B${body#?}" ;; *) bad1="A${body#?}" ;; esac
  first=1
  for k in "$good" "DHHC-1:02:$bad1:" "DHHC-1:07:$body:" "${good:0:30}"; do
    if nvme check-dhchap-key --key="$k" >/dev/null 2>&1; then v=true; else v=false; fi
    [ $first = 1 ] || echo ","
    first=0
    printf '  {"key": "%s", "valid": %s}' "$k" "$v"
  done
  echo; echo " ]}"
} > "$J"
cat "$J"
result auth.nvme_cli_vectors "$(grep -c '"output"' "$J")"

HKEY=$(nvme gen-dhchap-key --hmac=1 --nqn="$HOSTNQN")
CKEY=$(nvme gen-dhchap-key --hmac=2 --nqn="$PFX")
WRONG=$(nvme gen-dhchap-key --hmac=1 --nqn="$HOSTNQN")
WRONGC=$(nvme gen-dhchap-key --hmac=2 --nqn="$PFX")

# Cases: name hash group bidirectional verify
CASES="null-sha256:hmac(sha256):null:0:1
null-sha384:hmac(sha384):null:0:0
null-sha512:hmac(sha512):null:0:0
ffdhe2048-sha256:hmac(sha256):ffdhe2048:0:0
ffdhe3072-sha256:hmac(sha256):ffdhe3072:0:0
ffdhe4096-sha256:hmac(sha256):ffdhe4096:0:0
ffdhe6144-sha256:hmac(sha256):ffdhe6144:0:0
ffdhe8192-sha256:hmac(sha256):ffdhe8192:0:0
bidir-ffdhe2048-sha512:hmac(sha512):ffdhe2048:1:1
bidir-null-sha384:hmac(sha384):null:1:0"

step "rdmablkd on $IP:4420, one subsystem per case"
mkdir -p /tmp/rd
TR=$LAB_OUT/transcripts-raw.jsonl; rm -f "$TR"
{
  echo "data_dir: /tmp/rd"
  echo "transport: {provider: auto}"
  echo "listeners: [{addr: \"$IP:4420\"}, {addr: \"$IP:4430\", transport: tcp}]"
  echo "target: {dhchap_transcript: \"$TR\"}"
  echo "volumes:"
  echo "  - {name: ram, path: /dev/ram0, block_size: 512}"
  i=0
  for c in $CASES; do i=$((i+1)); echo "  - {name: v$i, path: v$i.img, size: 96M}"; done
  echo "subsystems:"
  i=0
  for c in $CASES; do
    i=$((i+1)); IFS=: read -r name h g bi vf <<< "$c"
    vol=v$i; [ "$vf" = 1 ] && [ "$name" = null-sha256 ] && vol=ram
    echo "  - nqn: $PFX-$name"
    echo "    dhchap_required: true"
    echo "    dhchap_hashes: [\"$h\"]"
    echo "    dhchap_dhgroups: [\"$g\"]"
    echo "    hosts:"
    echo "      - nqn: $HOSTNQN"
    echo "        dhchap_secret: \"$HKEY\""
    [ "$bi" = 1 ] && echo "        dhchap_ctrl_secret: \"$CKEY\""
    echo "    namespaces: [{nsid: 1, volume: $vol}]"
  done
} > /tmp/rd/rdmablkd.yaml
"$D" --config /tmp/rd/rdmablkd.yaml > "$LAB_OUT/auth-rdmablkd.log" 2>&1 &
DPID=$!
for _ in $(seq 300); do grep -q 'rdmablkd ready' "$LAB_OUT/auth-rdmablkd.log" && break; sleep 0.1; done
grep -q 'rdmablkd ready' "$LAB_OUT/auth-rdmablkd.log" || { cat "$LAB_OUT/auth-rdmablkd.log"; fail "rdmablkd did not start"; exit 1; }
grep -q 'provider=ibverbs' "$LAB_OUT/auth-rdmablkd.log" || fail "rdmablkd did not choose ibverbs"

# ndev NQN: the namespace block device of the subsystem NQN (native multipath puts nvmeXnY under
# /sys/class/nvme-subsystem; without it, under the controller).
ndev() {
  local c d
  for _ in $(seq 100); do
    for c in /sys/class/nvme-subsystem/nvme-subsys* /sys/class/nvme/nvme*; do
      [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] || continue
      for d in "$c"/nvme*n1; do
        d=/dev/${d##*/}
        [ -b "$d" ] && { echo "$d"; return 0; }
      done
    done
    sleep 0.1
  done
  return 1
}
kconnect() { # NQN [args]
  local n=$1; shift
  nvme connect -t rdma -a "$IP" -s 4420 -n "$n" --hostnqn="$HOSTNQN" --hostid="$HOSTID" --nr-io-queues=1 "$@"
}

for c in $CASES; do
  IFS=: read -r name h g bi vf <<< "$c"
  n=$PFX-$name
  step "kernel host -> rdmablkd: $name ($h, $g, bidirectional=$bi)"
  args=(--dhchap-secret="$HKEY"); [ "$bi" = 1 ] && args+=(--dhchap-ctrl-secret="$CKEY")
  t0=$(ts)
  if run kconnect "$n" "${args[@]}" && DEV=$(ndev "$n"); then
    result "auth.$name.connect_s" "$(since "$t0")"
    if dd if="$DEV" of=/dev/null bs=1M count=1 iflag=direct 2>/dev/null; then result "auth.$name.read" ok; else result "auth.$name.read" failed; fail "read after auth ($name)"; fi
    if [ "$vf" = 1 ]; then
      fio_job "auth.$name.verify" "$DEV" randwrite 16 --size="$VS" --verify=crc32c --do_verify=1 --numjobs=1
    fi
    run nvme disconnect -n "$n" || fail "disconnect $name"
  else
    result "auth.$name.connect" failed; fail "kernel host could not authenticate to rdmablkd ($name)"
    nvme disconnect -n "$n" >/dev/null 2>&1
  fi
done

# The same over NVMe/TCP: the kernel nvme-tcp host to rdmablkd's TCP listener ($IP:4430).
for c in "null-sha256:0" "bidir-ffdhe2048-sha512:1"; do
  IFS=: read -r name bi <<< "$c"
  n=$PFX-$name
  step "kernel nvme-tcp host -> rdmablkd over TCP: $name"
  args=(--dhchap-secret="$HKEY"); [ "$bi" = 1 ] && args+=(--dhchap-ctrl-secret="$CKEY")
  if run nvme connect -t tcp -a "$IP" -s 4430 -n "$n" --hostnqn="$HOSTNQN" --hostid="$HOSTID" --nr-io-queues=1 "${args[@]}" &&
     DEV=$(ndev "$n"); then
    result "auth.tcp.$name.connect" ok
    fio_job "auth.tcp.$name.verify" "$DEV" randwrite 16 --size=32M --verify=crc32c --do_verify=1 --numjobs=1
    run nvme disconnect -n "$n" || fail "disconnect tcp $name"
  else
    result "auth.tcp.$name.connect" failed; fail "kernel nvme-tcp host could not authenticate to rdmablkd ($name)"
    nvme disconnect -n "$n" >/dev/null 2>&1
  fi
done

refused() { # LABEL NQN args...: the connect must fail; keep what the kernel said
  local label=$1 n=$2 before; shift 2
  before=$(dmesg | wc -l)
  if kconnect "$n" "$@" > "$LAB_OUT/refused-$label.txt" 2>&1; then
    result "auth.refused.$label" CONNECTED; fail "$label: connect succeeded"
    nvme disconnect -n "$n" >/dev/null 2>&1
  else
    result "auth.refused.$label" "refused: $(tail -1 "$LAB_OUT/refused-$label.txt" | tr -s ' ' | cut -c1-120)"
  fi
  echo "--- kernel log ($label):"; dmesg | tail -n +$((before + 1)) | tee "$LAB_OUT/refused-$label-dmesg.txt"
}
step "refusals"
refused wrong-secret "$PFX-null-sha256" --dhchap-secret="$WRONG"
refused missing-secret "$PFX-null-sha256"
refused wrong-ctrl-secret "$PFX-bidir-ffdhe2048-sha512" --dhchap-secret="$HKEY" --dhchap-ctrl-secret="$WRONGC"
grep -i 'authenticat\|dhchap\|refus' "$LAB_OUT/auth-rdmablkd.log" | tail -20

kill -TERM "$DPID"; wait "$DPID"; result auth.rdmablkd_exit $?
sed "s|^{|{\"source\":\"Linux $KVER nvme-rdma host (nvme-cli $CLIVER) to rdmablkd, rdmablk lab scenario auth $(date -u +%Y-%m-%d)\",|" \
  "$TR" > "$LAB_OUT/transcripts-6.12-rdma.jsonl"
result auth.transcripts "$(wc -l < "$LAB_OUT/transcripts-6.12-rdma.jsonl")"
result auth.transcripts_authenticated "$(grep -c '"result":"authenticated"' "$LAB_OUT/transcripts-6.12-rdma.jsonl")"

step "our initiator -> kernel nvmet-rdma with DH-HMAC-CHAP (configfs)"
run modprobe nvmet-rdma || fail "nvmet-rdma"
KCTRL=$(nvme gen-dhchap-key --hmac=3 --nqn="$KNQN")
mkdir "$C/hosts/$HOSTNQN"
mkdir "$C/subsystems/$KNQN" && echo 0 > "$C/subsystems/$KNQN/attr_allow_any_host"
ln -s "$C/hosts/$HOSTNQN" "$C/subsystems/$KNQN/allowed_hosts/$HOSTNQN"
mkdir "$C/subsystems/$KNQN/namespaces/1" && echo -n /dev/ram0 > "$C/subsystems/$KNQN/namespaces/1/device_path"
echo 1 > "$C/subsystems/$KNQN/namespaces/1/enable"
mkdir "$C/ports/1"
echo rdma > "$C/ports/1/addr_trtype"; echo ipv4 > "$C/ports/1/addr_adrfam"
echo "$IP" > "$C/ports/1/addr_traddr"; echo 4421 > "$C/ports/1/addr_trsvcid"
ln -s "$C/subsystems/$KNQN" "$C/ports/1/subsystems/$KNQN" || fail "nvmet port link"
run modprobe nvmet-tcp || fail "nvmet-tcp"
mkdir "$C/ports/2"
echo tcp > "$C/ports/2/addr_trtype"; echo ipv4 > "$C/ports/2/addr_adrfam"
echo "$IP" > "$C/ports/2/addr_traddr"; echo 4431 > "$C/ports/2/addr_trsvcid"
ln -s "$C/subsystems/$KNQN" "$C/ports/2/subsystems/$KNQN" || fail "nvmet tcp port link"
head -c 16M /dev/urandom > /tmp/rand.bin
for kc in "uni:hmac(sha256):null:0" "bidir:hmac(sha384):ffdhe3072:1"; do
  IFS=: read -r label h g bi <<< "$kc"
  echo "$HKEY" > "$C/hosts/$HOSTNQN/dhchap_key"
  if [ "$bi" = 1 ]; then echo "$KCTRL" > "$C/hosts/$HOSTNQN/dhchap_ctrl_key"; else echo > "$C/hosts/$HOSTNQN/dhchap_ctrl_key" 2>/dev/null; fi
  echo "$h" > "$C/hosts/$HOSTNQN/dhchap_hash"; echo "$g" > "$C/hosts/$HOSTNQN/dhchap_dhgroup"
  for tr in rdma tcp; do
    R=("$B" --provider ibverbs --hostnqn "$HOSTNQN" -a "$IP" -s 4421 -n "$KNQN" --dhchap-secret "$HKEY")
    [ $tr = tcp ] && R=("$B" -t tcp --hostnqn "$HOSTNQN" -a "$IP" -s 4431 -n "$KNQN" --dhchap-secret "$HKEY")
    [ "$bi" = 1 ] && R+=(--dhchap-ctrl-secret "$KCTRL")
    step "rdmablk -> nvmet-$tr: $label ($h, $g)"
    rm -f /tmp/back.bin
    sfx=""; [ $tr = tcp ] && sfx=.tcp
    if run "${R[@]}" write --offset 1M -i /tmp/rand.bin && run "${R[@]}" read --offset 1M --length 16M -o /tmp/back.bin &&
       cmp /tmp/rand.bin /tmp/back.bin; then
      result "auth.initiator$sfx.$label" ok
    else result "auth.initiator$sfx.$label" FAILED; fail "our initiator with DH-HMAC-CHAP against nvmet-$tr ($label)"; fi
  done
done
# and a wrong secret is refused by nvmet
if "$B" --provider ibverbs --hostnqn "$HOSTNQN" -a "$IP" -s 4421 -n "$KNQN" --dhchap-secret "$WRONG" \
     read --offset 0 --length 4K -o /tmp/x.bin > "$LAB_OUT/init-wrong.txt" 2>&1; then
  result auth.initiator.wrong_secret CONNECTED; fail "nvmet accepted our initiator with a wrong secret"
else result auth.initiator.wrong_secret "refused: $(tail -1 "$LAB_OUT/init-wrong.txt" | cut -c1-120)"; fi
rm -f "$C/ports/1/subsystems/$KNQN" "$C/ports/2/subsystems/$KNQN"; rmdir "$C/ports/1" "$C/ports/2"
echo 0 > "$C/subsystems/$KNQN/namespaces/1/enable"; rmdir "$C/subsystems/$KNQN/namespaces/1"
rm -f "$C/subsystems/$KNQN/allowed_hosts/$HOSTNQN"; rmdir "$C/subsystems/$KNQN" "$C/hosts/$HOSTNQN"

step "dmesg"
dmesg | tail -n +$((DMESG_START + 1)) > "$LAB_OUT/dmesg-auth.txt"
# The refusals above log authentication failures on purpose; anything else is a finding.
bad=$(grep -E 'WARNING|BUG|Oops|Call Trace|tainted' "$LAB_OUT/dmesg-auth.txt")
[ -z "$bad" ] && result auth.dmesg clean || { echo "$bad"; fail "kernel warnings in dmesg"; }
[ "$FAILS" = 0 ]
