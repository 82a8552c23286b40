#!/bin/bash
# Build the lab's guest: one command, as root, on a Debian bookworm host.
#   test/lab/build-image.sh [--image-only]
# Installs the host packages with apt (qemu, debootstrap, rdma-core headers for -tags ibverbs),
# debootstraps Debian bookworm into $LAB_DIR/rootfs, installs the guest packages (Debian kernel 6.1
# with rdma_rxe / nvme-rdma / nvmet-rdma / nbd, rdma-core, fio, nvme-cli, ...), copies the kernel and
# initrd out and makes $LAB_DIR/rootfs.ext4. Re-running reuses the tree; --image-only just refreshes
# the guest init and remakes the image (seconds).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/config.sh"
[ "$(id -u)" = 0 ] || { echo "build-image.sh: run as root" >&2; exit 1; }
: "${MIRROR:?no Debian mirror found in the apt sources: set MIRROR}"
t0=$(date +%s)
mkdir -p "$LAB_DIR" "$CACHE" "$SHARE"
if [ "${1:-}" != "--image-only" ]; then
  echo "== host packages: $HOST_PACKAGES"
  missing=""
  for p in $HOST_PACKAGES; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
  fi
  if [ ! -x "$ROOTFS/usr/bin/apt-get" ] || [ ! -f "$ROOTFS/.lab-debootstrap-ok" ]; then
    echo "== debootstrap $SUITE from $MIRROR"
    rm -rf "$ROOTFS"
    debootstrap --variant=minbase --cache-dir="$CACHE" "$SUITE" "$ROOTFS" "$MIRROR"
    touch "$ROOTFS/.lab-debootstrap-ok"
  fi
  echo "== debootstrap done after $(( $(date +%s) - t0 ))s"
  cat > "$ROOTFS/etc/apt/sources.list" <<EOS
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian}/debian-security $SUITE-security main
EOS
  # the initramfs must find /dev/vda when booted with -kernel/-initrd
  mkdir -p "$ROOTFS/etc/initramfs-tools"
  for m in virtio_pci virtio_blk virtio_net ext4; do
    grep -qx "$m" "$ROOTFS/etc/initramfs-tools/modules" 2>/dev/null || echo "$m" >> "$ROOTFS/etc/initramfs-tools/modules"
  done
  mount --bind /proc "$ROOTFS/proc"; mount --bind /sys "$ROOTFS/sys"; mount --bind /dev "$ROOTFS/dev"
  trap 'umount "$ROOTFS/proc" "$ROOTFS/sys" "$ROOTFS/dev" 2>/dev/null || true; rm -f "$ROOTFS/usr/sbin/policy-rc.d"' EXIT
  printf '#!/bin/sh\nexit 101\n' > "$ROOTFS/usr/sbin/policy-rc.d"; chmod +x "$ROOTFS/usr/sbin/policy-rc.d"
  chroot "$ROOTFS" apt-get update -q
  DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" apt-get install -y -q --no-install-recommends $GUEST_PACKAGES
  if [ -n "$BACKPORTS_KERNEL" ]; then
    echo "deb $MIRROR $SUITE-backports main" > "$ROOTFS/etc/apt/sources.list.d/backports.list"
    chroot "$ROOTFS" apt-get update -q
    DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" apt-get install -y -q --no-install-recommends \
      -t "$SUITE-backports" $BACKPORTS_KERNEL
  fi
  chroot "$ROOTFS" apt-get clean
  umount "$ROOTFS/proc" "$ROOTFS/sys" "$ROOTFS/dev"; rm -f "$ROOTFS/usr/sbin/policy-rc.d"; trap - EXIT
  echo "== guest packages installed after $(( $(date +%s) - t0 ))s"
fi
[ -x "$ROOTFS/usr/bin/apt-get" ] || { echo "no rootfs in $ROOTFS: run without --image-only first" >&2; exit 1; }
echo rdmalab > "$ROOTFS/etc/hostname"
echo "/dev/vda / ext4 defaults 0 1" > "$ROOTFS/etc/fstab"
install -m 0755 "$HERE/guest/init.sh" "$ROOTFS/sbin/lab-init"
mkdir -p "$ROOTFS/mnt/share"
# package versions, for the results files
chroot "$ROOTFS" dpkg-query -W -f='${Package} ${Version}\n' > "$LAB_DIR/guest-packages.txt"
for K in "$ROOTFS"/boot/vmlinuz-*; do
  v=${K##*/vmlinuz-}
  cp "$K" "$LAB_DIR/vmlinuz-$v"; cp "$ROOTFS/boot/initrd.img-$v" "$LAB_DIR/initrd.img-$v"
  echo "== kernel $v -> $LAB_DIR/vmlinuz-$v"
done
rm -f "$IMAGE"
mke2fs -q -t ext4 -L rdmalab -d "$ROOTFS" "$IMAGE" "$IMAGE_SIZE"
echo "== image $IMAGE built, $(( $(date +%s) - t0 ))s total"
