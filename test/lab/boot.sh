#!/bin/bash
# Boot the lab guest under qemu TCG (no KVM), run one guest scenario, power off.
#   test/lab/boot.sh SCENARIO [lab.key=value ...]
# SCENARIO names test/lab/guest/scenario-SCENARIO.sh (copied into the 9p share at every boot, so
# editing a scenario needs no image rebuild), "idle", or "shell" (interactive root shell on the
# serial console; Ctrl-a x quits qemu).
# Env: RUNID (output folder $SHARE/out/$RUNID, default: a timestamp), MEM (MiB, 3072), SMP (2),
#      TIMEOUT (s, 1200), NET (user|tap|none; user = slirp with restrict=on, the guest reaches
#      nothing outside), TAP (tap name for NET=tap), MAC, EXTRA (qemu args), APPEND (kernel args),
#      LAB_NOLOCK=1 (skip the machine-wide lock: only for callers that already hold it),
#      TCG_THREAD (single|multi: TCG's threading; single for one vCPU, multi otherwise),
#      QEMU_BIN (a qemu-system-x86_64 to run instead of the system's, e.g. one built with its symbols
#      for test/lab/probes/qemuprof: the firmware directories of Debian's build are passed with -L).
# Only one lab VM set runs at a time on the machine (flock on $LAB_DIR/qemu.lock): TCG needs both
# cores. Exit status: the scenario's rc (from its "LAB: rc=N" line), or 125 if the guest did not
# get that far (boot failure, timeout).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/config.sh"
SCEN=${1:?usage: boot.sh SCENARIO [lab.key=value ...]}; shift
MEM=${MEM:-3072}; SMP=${SMP:-2}; TIMEOUT=${TIMEOUT:-1200}; NET=${NET:-user}
MAC=${MAC:-52:54:00:12:34:56}
RUNID=${RUNID:-$(date +%Y%m%d-%H%M%S)-$SCEN}
for f in "$IMAGE" "$KERNEL" "$INITRD"; do
  [ -f "$f" ] || { echo "boot.sh: missing $f: run test/lab/build-image.sh" >&2; exit 125; }
done
QEMU_BIN=${QEMU_BIN:-qemu-system-x86_64}; QEMU_L=()
[ "$QEMU_BIN" != qemu-system-x86_64 ] && QEMU_L=(-L /usr/share/qemu -L /usr/share/seabios -L /usr/lib/ipxe/qemu)
command -v "$QEMU_BIN" >/dev/null || { echo "boot.sh: no qemu ($QEMU_BIN): run test/lab/build-image.sh" >&2; exit 125; }
if [ "${LAB_NOLOCK:-0}" != 1 ]; then
  exec 9>"$LAB_DIR/qemu.lock"
  flock -n 9 || { echo "boot.sh: another lab VM runs; waiting for $LAB_DIR/qemu.lock"; flock 9; }
fi
OUTD=$SHARE/out/$RUNID
mkdir -p "$SHARE/scripts" "$SHARE/bin" "$OUTD"
# Each script lands by rename: twovm.sh boots two of these at once, and two cp's into the same
# files race ("File exists", or a guest reading a half-written script).
for f in "$HERE"/guest/*.sh; do
  cp "$f" "$SHARE/scripts/.$(basename "$f").$$" && mv -f "$SHARE/scripts/.$(basename "$f").$$" "$SHARE/scripts/$(basename "$f")"
done
rm -f "$OUTD/$SCEN.log"
case "$NET" in
  user) NETARGS=(-netdev "user,id=n0,restrict=on" -device "virtio-net-pci,netdev=n0,mac=$MAC") ;;
  tap)  NETARGS=(-netdev "tap,id=n0,ifname=${TAP:-tap0},script=no,downscript=no" -device "virtio-net-pci,netdev=n0,mac=$MAC") ;;
  none) NETARGS=(-nic none) ;;
  *) echo "boot.sh: NET=$NET?" >&2; exit 125 ;;
esac
SERIAL=$OUTD/$SCEN.serial
# TCG threading: a one-vCPU guest runs single-threaded TCG (TCG_THREAD=multi to override): it has
# no second vCPU to run in parallel. Under multi-threaded TCG the one-vCPU 6.12 guests took double
# faults in the slab allocator's fast path with RFLAGS holding address bits, under rxe load (runs
# 2026-12-05-2253 and -2341; earlier 2026-11-25-0728, 2026-12-04-1947): an emulation fault is the
# suspect, and single-threaded TCG takes another path for the guest's atomic operations. It did not
# cure it: run 2026-12-06-0826 (thread=single) lost its 6.12 initiator guest the same way (RFLAGS
# 837e6202 beside RAX ...837e6840, in kmem_cache_alloc_node under rxe's send_common_ack). Run
# 2026-12-07-0149's 6.12 initiator guest logged a kernel-mode #DB (exc_debug_kernel) in a kworker,
# a single-step trap in code nobody steps: a stray TF in RFLAGS, possibly the same fault.
TCGTHREAD=${TCG_THREAD:-$([ "$SMP" = 1 ] && echo single || echo multi)}
KARGS="root=/dev/vda rw console=ttyS0,115200 init=/sbin/lab-init panic=1 loglevel=4 net.ifnames=0 lab.scenario=$SCEN lab.name=$SCEN lab.runid=$RUNID $* ${APPEND:-}"
t0=$(date +%s)
echo "boot.sh: scenario=$SCEN out=$OUTD"
QEMU=("$QEMU_BIN" "${QEMU_L[@]}"
  -machine q35 -accel "tcg,thread=$TCGTHREAD,tb-size=512" -cpu max -smp "$SMP" -m "$MEM"
  -nographic -no-reboot -name "$SCEN,debug-threads=on"
  -kernel "$KERNEL" -initrd "$INITRD" -append "$KARGS"
  -drive "file=$IMAGE,format=raw,if=virtio,cache=unsafe" -snapshot
  -virtfs "local,path=$SHARE,mount_tag=labshare,security_model=none,id=labshare"
  "${NETARGS[@]}" ${EXTRA:-})
# qemu must not inherit the lock (fd 9): a qemu orphaned by a killed caller would hold it.
if [ "$SCEN" = shell ]; then
  timeout --foreground "$TIMEOUT" "${QEMU[@]}" 9>&- 2>&1 | tee "$SERIAL"
  qrc=$?
else
  # In the background so that a signal to this script stops qemu at once (bash runs traps only
  # between foreground commands).
  timeout "$TIMEOUT" "${QEMU[@]}" 9>&- < /dev/null > "$SERIAL" 2>&1 &
  QPID=$!
  trap 'kill -TERM $QPID 2>/dev/null; wait $QPID 2>/dev/null; echo "boot.sh: interrupted, qemu stopped" >&2; exit 130' INT TERM HUP
  wait $QPID; qrc=$?
  trap - INT TERM HUP
fi
rc=$(grep -a '^LAB: rc=' "$SERIAL" | tail -1 | sed 's/.*rc=//; s/[^0-9]//g')
echo "boot.sh: scenario=$SCEN qemu rc=$qrc wall=$(( $(date +%s) - t0 ))s scenario rc=${rc:-none}"
[ -n "$rc" ] || { tail -20 "$SERIAL"; exit 125; }
exit "$rc"
