#!/bin/bash
# PID 1 of the rxe-vm guest, started by the initramfs after switch_root into the host's root
# (read-only virtio-9p).  /run/rxevm is this run's control directory, shared read-write with the host:
#   in:  params (RXE_CWD RXE_NETDEV RXE_ADDR RXE_MTU RXE_VERBOSE), env (caller's `export -p`), cmd
#   out: uptime.init, ready (guest uptime when rxe0 was usable), rc (the command's exit status),
#        error (why the guest could not run the command; the host then exits 125)
# Whatever happens, this script ends by powering the VM off; if it died instead, the kernel would
# panic (PID 1 exited) and panic=-1 with qemu -no-reboot ends the VM as well.
R=/run/rxevm
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
GIDS=/sys/class/infiniband/rxe0/ports/1/gids

poweroff_now() {
  cat /proc/uptime > $R/uptime.end 2>/dev/null
  sync
  echo o > /proc/sysrq-trigger   # immediate power-off: qemu exits
  sleep 10
  exit 1
}
fail() {  # the VM could not provide what the command needs: report, never run the command
  echo "rxe-vm guest: $*" > /dev/console
  echo "$*" > $R/error
  poweroff_now
}
# boot.log (the serial console) records each stage, so a boot that stalls shows where
stage() { echo "rxe-vm guest: [$(cut -d' ' -f1 /proc/uptime) s] $*" > /dev/console; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
# what udev would add: bash's process substitution (`< <(cmd)`) opens /dev/fd/N, and a
# script under `set -e` dies where it is missing
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
cat /proc/uptime > $R/uptime.init
stage "guest-init started"
. $R/params

# Modules come from the cached bundle (share 'kroot' = <bundle> with lib/modules/<kver>); the host's
# root has none for this kernel.  /proc/sys/kernel/modprobe points at the same wrapper so the kernel's
# own autoload requests (crypto-crc32 for rxe's ICRC, rtnl-link-*) resolve too.
printf '#!/bin/sh\nexec /sbin/modprobe -d /run/kroot "$@"\n' > /run/modprobe
chmod +x /run/modprobe
echo /run/modprobe > /proc/sys/kernel/modprobe
for m in crc32_pclmul crc32_generic; do /run/modprobe -q "$m"; done   # crc32_pclmul needs -cpu with PCLMUL
for m in rdma_rxe ib_uverbs rdma_ucm ib_umad; do
  /run/modprobe "$m" 2> $R/modprobe.err || fail "modprobe $m failed: $(cat $R/modprobe.err)"
done

stage "modules loaded"

# Network: guest-local only (qemu -nic none: no packet can leave the VM).  rxe needs a netdev with an
# IP address; a dummy netdev with a non-loopback address also satisfies RDMA-CM, which refuses
# loopback devices and addresses.
ip link set lo up
hostname rxe-vm
case "${RXE_NETDEV:-dummy}" in
  dummy)
    /run/modprobe dummy || fail "modprobe dummy failed"
    ip link add rxenet0 type dummy || fail "cannot create the dummy netdev"
    ip link set rxenet0 mtu "${RXE_MTU:-1500}" up || fail "cannot set MTU ${RXE_MTU:-1500} on rxenet0"
    ip addr add "${RXE_ADDR:-192.0.2.1/24}" dev rxenet0 || fail "cannot add address ${RXE_ADDR:-192.0.2.1/24}"
    dev=rxenet0 ;;
  lo) dev=lo ;;
  *)  fail "RXE_NETDEV=$RXE_NETDEV: use dummy or lo" ;;
esac
rdma link add rxe0 type rxe netdev "$dev" 2> $R/rdma.err || fail "rdma link add rxe0 netdev $dev: $(cat $R/rdma.err)"

# devtmpfs creates /dev/infiniband/uverbs0 by itself (no udev needed).  GIDs are filled in
# asynchronously after `rdma link add`: wait for the port to be ACTIVE and for the IPv4-mapped
# RoCE v2 GID, and export its index (perftest -x, ibv_*_pingpong -g, UCX_IB_GID_INDEX).
stage "rxe0 on $dev created; waiting for ACTIVE and the IPv4 RoCE v2 GID"
RXE_GID_INDEX=
for _ in $(seq 300); do
  if [ -e /dev/infiniband/uverbs0 ] && grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; then
    for g in $GIDS/*; do
      i=${g##*/}
      case "$(cat $g 2>/dev/null)" in
        0000:0000:0000:0000:0000:ffff:*)
          [ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] \
            && { RXE_GID_INDEX=$i; break; } ;;
      esac
    done
  fi
  [ -n "$RXE_GID_INDEX" ] && break
  sleep 0.1
done
[ -n "$RXE_GID_INDEX" ] || fail "rxe0 did not become ACTIVE with an IPv4 RoCE v2 GID within 30 s ($(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null))"
RXE_IP=$(ip -4 -o addr show dev "$dev" | awk '{split($4, a, "/"); print a[1]; exit}')

# Name resolution for the guest's own hostname: the host's /etc/hosts plus rxe-vm -> RXE_IP,
# bind-mounted over the read-only original.
{ cat /etc/hosts 2>/dev/null; echo "$RXE_IP rxe-vm"; } > /run/hosts
mount --bind /run/hosts /etc/hosts
printf 'rxe-vm\n' > /run/hostname && mount --bind /run/hostname /etc/hostname 2>/dev/null

# RDMA needs pinned memory; the caller's limits don't exist here (PID 1 starts with the kernel's).
ulimit -l unlimited
ulimit -n 65536 2>/dev/null

# The caller's working directory, writable, at the same path.
if [ "$RXE_CWD" != / ]; then
  mkdir -p "$RXE_CWD" 2>/dev/null
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,rw,cache=mmap cwd "$RXE_CWD" \
    || fail "cannot mount the working directory share at $RXE_CWD"
fi

# The command's stdout/stderr: two virtio-serial ports (not ttys: isatty() is false, as in CI).
OUT= ERR=
for p in /sys/class/virtio-ports/vport*; do
  case "$(cat $p/name 2>/dev/null)" in
    rxevm.out) OUT=/dev/${p##*/} ;;
    rxevm.err) ERR=/dev/${p##*/} ;;
  esac
done
[ -n "$OUT" ] && [ -n "$ERR" ] || fail "virtio-serial ports rxevm.out/rxevm.err not found"

cat /proc/uptime > $R/ready
stage "ready (GID index $RXE_GID_INDEX); running the command"
if [ "${RXE_VERBOSE:-0}" = 1 ]; then
  { echo "rxe-vm: $(uname -r), netdev $dev ip $RXE_IP gid_index $RXE_GID_INDEX, init at $(cut -d' ' -f1 $R/uptime.init) s, rxe0 ready at $(cut -d' ' -f1 $R/ready) s (guest uptime)"
    rdma link show; } > $ERR 2>&1
fi
(
  set -a; . $R/env; set +a   # the caller's exported environment, then ours on top
  export RXE_DEV=rxe0 RXE_IF=$dev RXE_IP RXE_GID_INDEX RXE_VM=1
  cd "$RXE_CWD" || exit 125
  exec bash $R/cmd
) < /dev/null > $OUT 2> $ERR
rc=$?
stage "command exited with status $rc"
echo $rc > $R/rc
poweroff_now
