#!/bin/bash
# PID 1 of the lab guest (installed as /sbin/lab-init; the kernel is booted with init=/sbin/lab-init).
# Mounts the basics and the 9p share (/mnt/share), then runs the scenario named on the kernel
# command line (lab.scenario=NAME -> /mnt/share/scripts/scenario-NAME.sh). Every other
# lab.KEY=VALUE becomes LAB_KEY=VALUE in the scenario's environment. Output goes to the serial
# console and to /mnt/share/out/NAME.log; the last line is "LAB: rc=N". Then it powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys  || mount -t sysfs sysfs /sys
mountpoint -q /dev  || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm; mountpoint -q /dev/pts || mount -t devpts devpts /dev/pts
mountpoint -q /run || mount -t tmpfs tmpfs /run
mountpoint -q /tmp || mount -t tmpfs tmpfs /tmp
modprobe configfs 2>/dev/null; mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
mount -o remount,rw / 2>/dev/null
hostname rdmalab
# a fresh NVMe host identity per boot: the image is shared by every VM
mkdir -p /etc/nvme
# (nvme gen-hostnqn reads the DMI product UUID, which is all zeros under qemu)
cat /proc/sys/kernel/random/uuid > /etc/nvme/hostid
echo "nqn.2014-08.org.nvmexpress:uuid:$(cat /etc/nvme/hostid)" > /etc/nvme/hostnqn
ip link set lo up
SCEN=idle
for p in $(cat /proc/cmdline); do
  case "$p" in
    lab.scenario=*) SCEN=${p#lab.scenario=} ;;
    lab.*=*) k=${p%%=*}; k=${k#lab.}; export "LAB_$(echo "$k" | tr a-z. A-Z_)=${p#*=}" ;;
  esac
done
OUT=/tmp/out
if modprobe 9pnet_virtio 2>/dev/null && modprobe 9p 2>/dev/null &&
   mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 labshare /mnt/share 2>/dev/null; then
  OUT=/mnt/share/out/${LAB_RUNID:-run}
fi
mkdir -p "$OUT"
export LAB_OUT=$OUT LAB_SHARE=/mnt/share
{
  echo "LAB: start uptime=$(cut -d' ' -f1 /proc/uptime)s kernel=$(uname -r) scenario=$SCEN"
  S=/mnt/share/scripts/scenario-$SCEN.sh
  rc=0
  if [ -f "$S" ]; then
    bash "$S"; rc=$?
  elif [ "$SCEN" = shell ]; then
    setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
  elif [ "$SCEN" != idle ]; then
    echo "LAB: no scenario script $S"; rc=127
  fi
  echo "LAB: done uptime=$(cut -d' ' -f1 /proc/uptime)s"
  echo "LAB: rc=$rc"
} 2>&1 | tee "$OUT/$SCEN.log" > /dev/ttyS0
sync
umount /mnt/share 2>/dev/null
busybox poweroff -f 2>/dev/null || echo o > /proc/sysrq-trigger
