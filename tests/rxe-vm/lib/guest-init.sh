#!/bin/bash
# PID 1 of the rxe-vm guest, started by the initramfs after switch_root into the host's root
# (read-only virtio-9p).  /run/rxevm is this run's control directory, shared read-write with the host:
#   in:  params (RXE_CWD RXE_NETDEV RXE_ADDR RXE_MTU RXE_DEVICES RXE_VERBOSE, and from tests/fabric:
#        RXE_HOSTNAME RXE_GATEWAY), env (caller's `export -p`), cmd, hosts (optional: lines for
#        /etc/hosts)
#   out: uptime.init, ready (guest uptime when rxe0 was usable), rc (the command's exit status),
#        error (why the guest could not run the command; the host then exits 125)
# Whatever happens, this script ends by powering the VM off; if it died instead, the kernel would
# panic (PID 1 exited) and panic=-1 with qemu -no-reboot ends the VM as well.
R=/run/rxevm
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

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

# Network.  dummy and lo: guest-local only (qemu -nic none: no packet can leave the VM).  rxe needs
# a netdev with an IP address; a dummy netdev with a non-loopback address also satisfies RDMA-CM,
# which refuses loopback devices and addresses.  nic: the guest's virtio NIC, a port of the switch
# that tests/fabric builds inside a network namespace of the host (and nothing else).
ip link set lo up
name=${RXE_HOSTNAME:-rxe-vm}
hostname "$name"
case "${RXE_NETDEV:-dummy}" in
  nic)
    /run/modprobe virtio_net || fail "modprobe virtio_net failed"
    dev=
    for _ in $(seq 50); do
      for n in /sys/class/net/*; do
        [ "$(basename "$(readlink -f $n/device/driver 2>/dev/null)")" = virtio_net ] && { dev=${n##*/}; break; }
      done
      [ -n "$dev" ] && break
      sleep 0.1
    done
    [ -n "$dev" ] || fail "no virtio NIC appeared (qemu -netdev/-device missing?)"
    ip link set "$dev" mtu "${RXE_MTU:-1500}" up || fail "cannot set MTU ${RXE_MTU:-1500} on $dev"
    ip addr add "$RXE_ADDR" dev "$dev" || fail "cannot add address $RXE_ADDR to $dev"
    if [ -n "${RXE_GATEWAY:-}" ]; then
      ip route add default via "$RXE_GATEWAY" dev "$dev" || fail "cannot route through $RXE_GATEWAY"
    fi ;;
  dummy)
    /run/modprobe dummy || fail "modprobe dummy failed"
    ip link add rxenet0 type dummy || fail "cannot create the dummy netdev"
    ip link set rxenet0 mtu "${RXE_MTU:-1500}" up || fail "cannot set MTU ${RXE_MTU:-1500} on rxenet0"
    ip addr add "${RXE_ADDR:-192.0.2.1/24}" dev rxenet0 || fail "cannot add address ${RXE_ADDR:-192.0.2.1/24}"
    dev=rxenet0 ;;
  lo) dev=lo ;;
  *)  fail "RXE_NETDEV=$RXE_NETDEV: use dummy, lo or nic" ;;
esac
rdma link add rxe0 type rxe netdev "$dev" 2> $R/rdma.err || fail "rdma link add rxe0 netdev $dev: $(cat $R/rdma.err)"

# RXE_DEVICES=N (default 1): rxe1.. on dummy netdevs of their own (rxenet1.., 198.51.100.1/24,
# 203.0.113.1/24: other subnets), so that one md can span several devices.  Each device talks to
# itself only (rxe loops back its own address; traffic between two rxe devices of one guest would
# go through lo, which has no rxe).
RXE_DEVICE_NAMES=rxe0
case "${RXE_DEVICES:-1}" in 1|2|3) ;; *) fail "RXE_DEVICES=$RXE_DEVICES: use 1, 2 or 3" ;; esac
[ "${RXE_DEVICES:-1}" = 1 ] || [ "${RXE_NETDEV:-dummy}" = dummy ] || fail "RXE_DEVICES>1 needs RXE_NETDEV=dummy"
for i in $(seq 1 $((${RXE_DEVICES:-1} - 1))); do
  addr=$(echo "198.51.100.1/24 203.0.113.1/24" | cut -d' ' -f$i)
  ip link add rxenet$i type dummy || fail "cannot create the dummy netdev rxenet$i"
  ip link set rxenet$i mtu "${RXE_MTU:-1500}" up || fail "cannot set MTU ${RXE_MTU:-1500} on rxenet$i"
  ip addr add "$addr" dev rxenet$i || fail "cannot add address $addr to rxenet$i"
  rdma link add rxe$i type rxe netdev rxenet$i 2> $R/rdma.err || fail "rdma link add rxe$i: $(cat $R/rdma.err)"
  RXE_DEVICE_NAMES="$RXE_DEVICE_NAMES rxe$i"
done

# devtmpfs creates /dev/infiniband/uverbsN by itself (no udev needed).  GIDs are filled in
# asynchronously after `rdma link add`: wait for each port to be ACTIVE and for its IPv4-mapped
# RoCE v2 GID, and export rxe0's index (perftest -x, ibv_*_pingpong -g, UCX_IB_GID_INDEX).
# gid_index DEV: prints DEV's IPv4 RoCE v2 GID index once DEV is ACTIVE, else nothing
gid_index() {
  local port=/sys/class/infiniband/$1/ports/1 g i
  grep -q ACTIVE $port/state 2>/dev/null || return 0
  for g in $port/gids/*; do
    i=${g##*/}
    case "$(cat $g 2>/dev/null)" in
      0000:0000:0000:0000:0000:ffff:*)
        [ "$(cat $port/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo $i; return 0; } ;;
    esac
  done
}
stage "$RXE_DEVICE_NAMES created; waiting for ACTIVE and the IPv4 RoCE v2 GIDs"
for d in $RXE_DEVICE_NAMES; do
  gid=
  for _ in $(seq 300); do
    uverbs=$(grep -lx $d /sys/class/infiniband_verbs/uverbs*/ibdev 2>/dev/null | head -n1)
    [ -n "$uverbs" ] && uverbs=${uverbs%/ibdev} && [ -e /dev/infiniband/${uverbs##*/} ] && gid=$(gid_index $d)
    [ -n "$gid" ] && break
    sleep 0.1
  done
  [ -n "$gid" ] || fail "$d did not become ACTIVE with an IPv4 RoCE v2 GID within 30 s ($(cat /sys/class/infiniband/$d/ports/1/state 2>/dev/null))"
  [ $d = rxe0 ] && RXE_GID_INDEX=$gid
done
RXE_IP=$(ip -4 -o addr show dev "$dev" | awk '{split($4, a, "/"); print a[1]; exit}')

# Name resolution for the guest's own hostname (and a fabric's other nodes): the host's /etc/hosts
# plus NAME -> RXE_IP, bind-mounted over the read-only original.
{ cat /etc/hosts 2>/dev/null; echo "$RXE_IP $name"; cat $R/hosts 2>/dev/null; } > /run/hosts
mount --bind /run/hosts /etc/hosts
printf '%s\n' "$name" > /run/hostname && mount --bind /run/hostname /etc/hostname 2>/dev/null

# RDMA needs pinned memory; the caller's limits don't exist here (PID 1 starts with the kernel's).
ulimit -l unlimited
ulimit -n 65536 2>/dev/null

# The checkout, read-only at its path, where this guest's own /tmp would hide it (the run's
# hidden_checkout); the working directory is mounted after it, so it may lie inside.
if [ -n "${RXE_SRC:-}" ]; then
  mkdir -p "$RXE_SRC" 2>/dev/null
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro,cache=mmap src "$RXE_SRC" \
    || fail "cannot mount the checkout share at $RXE_SRC"
fi
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
  export RXE_DEV=rxe0 RXE_IF=$dev RXE_IP RXE_GID_INDEX RXE_VM=1 RXE_DEVICE_NAMES
  cd "$RXE_CWD" || exit 125
  exec bash $R/cmd
) < /dev/null > $OUT 2> $ERR
rc=$?
stage "command exited with status $rc"
echo $rc > $R/rc
poweroff_now
