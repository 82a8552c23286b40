# Settings shared by the lab's host-side scripts (sourced, not run).
# Big artefacts live outside the repository, in LAB_DIR.
LAB_DIR=${LAB_DIR:-/var/tmp/rdmablk-lab}
ROOTFS=${ROOTFS:-$LAB_DIR/rootfs}          # debootstrap tree of the guest
IMAGE=${IMAGE:-$LAB_DIR/rootfs.ext4}       # raw ext4 image made from ROOTFS (booted with -snapshot)
SHARE=${SHARE:-$LAB_DIR/share}             # 9p folder: /mnt/share in the guest (bin/, scripts/, out/)
CACHE=${CACHE:-$LAB_DIR/cache}             # debootstrap .deb cache
IMAGE_SIZE=${IMAGE_SIZE:-4G}
SUITE=${SUITE:-bookworm}
# LAB_KERNEL picks the guest kernel by version prefix: 6.1 (Debian bookworm's, default) or 6.12
# (bookworm-backports: adds ublk_drv, nvme-loop and NVMe in-band authentication).
LAB_KERNEL=${LAB_KERNEL:-6.1}
KERNEL=${KERNEL:-$(ls "$LAB_DIR"/vmlinuz-"$LAB_KERNEL".* 2>/dev/null | sort -V | tail -1 || true)}
INITRD=${INITRD:-$(ls "$LAB_DIR"/initrd.img-"$LAB_KERNEL".* 2>/dev/null | sort -V | tail -1 || true)}
# The Debian mirror the host's apt already uses (override with MIRROR=...).
if [ -z "${MIRROR:-}" ]; then
  MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$MIRROR" ] || MIRROR=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
fi
HOST_PACKAGES="qemu-system-x86 debootstrap e2fsprogs iproute2 bc gcc libc6-dev libibverbs-dev librdmacm-dev"
GUEST_PACKAGES="linux-image-amd64 initramfs-tools rdma-core ibverbs-providers ibverbs-utils rdmacm-utils \
fio nvme-cli iproute2 kmod procps util-linux busybox iputils-ping nbd-client linux-perf \
${GUEST_PACKAGES_EXTRA:-}"
# The bookworm-backports kernel installed next to 6.1 (empty BACKPORTS_KERNEL skips it).
BACKPORTS_KERNEL=${BACKPORTS_KERNEL-linux-image-amd64}
