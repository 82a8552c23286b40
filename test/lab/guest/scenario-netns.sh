#!/bin/bash
# Namespace-isolated queue pairs, for real (issue 13 item 7). RDMA netns mode exclusive; rdmablkd
# in init_net on rxe0 over veth0 (192.168.80.1); the tenant namespace owns veth1 (192.168.80.2)
# and the RDMA device rxe1 on it (created in init_net, moved with `rdma dev set rxe1 netns tenant`);
# a second namespace ("other") has no device. Checks: each namespace sees only its own device;
# `rdmablk identify` from "other" fails for want of a device; from "tenant" (`ip netns exec tenant
# rdmablk --netns tenant ...`) it reaches rdmablkd, and then `rdmablk connect` + fio crc32c verify
# through /dev/nbd0. RESULT netns.* lines record what this kernel's rxe does.
. /mnt/share/scripts/lib.sh
D=/mnt/share/bin/rdmablkd; B=/mnt/share/bin/rdmablk; NQN=nqn.2026-11.io.rdmablk:netns
VS=${LAB_VERIFYSIZE:-64M}
run modprobe rdma_rxe || exit 1
run modprobe ib_uverbs; run modprobe rdma_ucm; run modprobe brd rd_nr=1 rd_size=262144; run modprobe nbd
result netns.kernel "$(uname -r)"
run rdma system set netns exclusive || fail "rdma system set netns exclusive"
rdma system show
ip netns add tenant && ip netns add other || exit 1
ip link add veth0 type veth peer name veth1 || exit 1
ip addr add 192.168.80.1/24 dev veth0 && ip link set veth0 up
ip link set veth1 netns tenant
ip netns exec tenant ip link set lo up
ip netns exec tenant ip addr add 192.168.80.2/24 dev veth1
ip netns exec tenant ip link set veth1 up
run rdma link add rxe0 type rxe netdev veth0 || fail "rxe0 on veth0"
# rxe1 on the tenant's netdev: `rdma link add` inside the namespace still creates the device in
# init_net (seen on 6.1), so create it there and move it.
run ip netns exec tenant rdma link add rxe1 type rxe netdev veth1 || fail "rxe1 on veth1 (inside tenant)"
if rdma dev show rxe1 > /dev/null 2>&1; then
  result netns.rxe1_created_in init_net
  run rdma dev set rxe1 netns tenant || fail "rdma dev set rxe1 netns tenant"
else result netns.rxe1_created_in tenant; fi
echo "init_net sees: $(rdma dev | awk '{print $2}' | tr '\n' ' ')"
echo "tenant sees:   $(ip netns exec tenant rdma dev | awk '{print $2}' | tr '\n' ' ')"
echo "other sees:    $(ip netns exec other rdma dev | awk '{print $2}' | tr '\n' ' ')"
result netns.tenant_devices "$(ip netns exec tenant rdma dev | awk '{print $2}' | tr '\n' ',' | sed 's/,$//')"
result netns.other_devices "$(ip netns exec other rdma dev | awk '{print $2}' | tr '\n' ',' | sed 's/,$//')"
run ip netns exec tenant ping -c 2 -W 5 192.168.80.1 || fail "tenant cannot ping the target"
mkdir -p /tmp/rd
cat > /tmp/rd/rdmablkd.yaml <<EOC
data_dir: /tmp/rd
transport: {provider: ibverbs}
listeners: [{addr: "192.168.80.1:4420"}]
volumes: [{name: ram0, path: /dev/ram0, block_size: 512}]
subsystems:
  - nqn: $NQN
    serial: rdmablknetns1
    allow_any_host: true
    namespaces: [{nsid: 1, volume: ram0}]
EOC
"$D" --config /tmp/rd/rdmablkd.yaml > "$LAB_OUT/rdmablkd.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do grep -q -i 'listen' "$LAB_OUT/rdmablkd.log" && break; sleep 0.1; done
cat "$LAB_OUT/rdmablkd.log"
step "from the namespace without a device"
ip netns exec other "$B" --provider ibverbs --netns other --timeout 20s -a 192.168.80.1 -n "$NQN" identify > "$LAB_OUT/other.txt" 2>&1
orc=$?; cat "$LAB_OUT/other.txt"
result netns.other_identify_rc "$orc"
[ "$orc" != 0 ] || fail "identify from a namespace without an RDMA device succeeded"
step "from the tenant namespace"
ip netns exec tenant "$B" --provider ibverbs --netns tenant --timeout 30s -a 192.168.80.1 -n "$NQN" identify > "$LAB_OUT/tenant.txt" 2>&1
trc=$?; cat "$LAB_OUT/tenant.txt"
result netns.tenant_identify_rc "$trc"
if [ "$trc" = 0 ]; then
  step "rdmablk connect from the tenant namespace, fio verify through the device"
  if ip netns exec tenant "$B" --provider ibverbs --netns tenant -a 192.168.80.1 -n "$NQN" connect > "$LAB_OUT/connect.txt" 2>&1; then
    cat "$LAB_OUT/connect.txt"
    dev=$(grep -o '/dev/nbd[0-9]*\|/dev/ublkb[0-9]*' "$LAB_OUT/connect.txt" | head -1)
    if [ -b "$dev" ]; then
      fio --name=netns --filename="$dev" --rw=randwrite --bs=4k --iodepth=16 --ioengine=libaio --direct=1 \
        --size="$VS" --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
        --output-format=json --output="$LAB_OUT/fio-netns.json"
      err=$(awk '$1=="\"error\"" {gsub(",","",$3); print $3; exit}' "$LAB_OUT/fio-netns.json")
      result netns.fio.err "${err:-none}"
      [ "$err" = 0 ] || fail "fio verify err=$err"
    else fail "no block device from rdmablk connect"; fi
    ip netns exec tenant "$B" disconnect --all > /dev/null 2>&1 || ip netns exec tenant "$B" disconnect "$NQN"
  else cat "$LAB_OUT/connect.txt"; fail "rdmablk connect"; fi
else
  # The kernel fact to record: where does the tenant's traffic go? rxe's UDP socket (port 4791)
  # lives in init_net on kernels without rxe netns support, so replies sent to veth1 die there.
  result netns.tenant_udp4791 "$(ip netns exec tenant ss -uan | grep -c ':4791')"
  result netns.init_udp4791 "$(ss -uan | grep -c ':4791')"
  echo "rxe0 counters:"; rdma statistic show link rxe0/1
  echo "tenant rxe1 counters:"; ip netns exec tenant rdma statistic show link rxe1/1
  fail "rdmablk could not reach rdmablkd from the tenant namespace on $(uname -r)"
fi
kill -TERM "$DPID"; wait "$DPID"
[ "$FAILS" = 0 ]
