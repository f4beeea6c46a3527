#!/bin/bash
# tests/rxe-vm/lib/setup.sh CACHE_DIR KEY
#
# Builds one kernel + initramfs bundle for tests/rxe-vm/run, atomically, into CACHE_DIR/<kver>-<KEY>/:
#   vmlinuz          Debian's kernel image (from linux-image-6.1.0-NN-amd64)
#   lib/modules/...  only the modules the VM needs (and their dependencies), with a fresh depmod index
#   initrd.img       busybox + the virtio/9p modules that reach the host's root filesystem
#   kver, ready      the kernel release; "ready" is written last and marks the bundle complete
# The kernel package is only downloaded (`apt-get download`) and extracted: nothing is installed into
# the host's /boot or /lib/modules.  The caller holds the cache lock; this script must not be run
# concurrently on the same CACHE_DIR without it.
#
# Environment: RXE_VM_KERNEL  kernel package to use (default: what linux-image-amd64 depends on).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=$1 KEY=$2
say() { echo "rxe-vm setup: $*" >&2; }

# Modules the guest loads.  The kernel also autoloads a few by alias (crypto-crc32 for rxe's ICRC,
# rtnl-link-dummy); those land here through the explicit names.  Anything a test may autoload on top
# (sockets diagnostics for `ss`, veth for extra netdevs) is listed so it is there when asked for.
# tests/fabric's guests add a NIC (virtio_net), the wire's faults (netem, tbf) and packet capture.
INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p virtio_console)
GUEST_MODULES=(crc32_pclmul crc32_generic crc32c_generic rdma_rxe ib_uverbs rdma_ucm ib_umad ib_ipoib
               dummy veth inet_diag tcp_diag udp_diag unix_diag
               virtio_net sch_netem sch_tbf af_packet)

apt_lists_present() { compgen -G '/var/lib/apt/lists/*_Packages*' > /dev/null; }

resolve_kernel_package() {
  if [[ -n "${RXE_VM_KERNEL:-}" ]]; then echo "$RXE_VM_KERNEL"; return; fi
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [[ -z "$pkg" ]]; then
    say "apt lists have no linux-image-amd64: running apt-get update"
    apt-get update -q >&2
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
  [[ -n "$pkg" ]] || { say "cannot resolve linux-image-amd64 to a kernel package"; exit 1; }
  echo "$pkg"
}

kpkg=$(resolve_kernel_package)
kver=${kpkg#linux-image-}
dest=$CACHE/$kver-$KEY
work=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

say "downloading $kpkg"
(cd "$work" && apt-get -o APT::Sandbox::User=root download -q "$kpkg" >&2) || {
  apt_lists_present && { say "apt-get download $kpkg failed"; exit 1; }
  apt-get update -q >&2 && (cd "$work" && apt-get -o APT::Sandbox::User=root download -q "$kpkg" >&2)
}
say "extracting $kpkg"
mkdir "$work/full"
dpkg-deb -x "$work"/linux-image-*.deb "$work/full"
rm -f "$work"/linux-image-*.deb
full_moddir=$work/full/lib/modules/$kver
depmod -b "$work/full" "$kver"

# Copy the dependency closure of the wanted modules, keeping the package's relative paths, plus the
# index files depmod needs to tell built-in modules apart (modprobe of a built-in one then succeeds).
bundle=$work/bundle
mod_paths() {  # prints the .ko paths (dependencies first) of the named modules
  local m
  for m in "$@"; do
    modprobe -d "$work/full" -S "$kver" --show-depends "$m" \
      || { say "module $m not found in $kpkg"; return 1; }
  done | awk '$1 == "insmod" {print $2}'
}
mkdir -p "$bundle/lib/modules/$kver"
cp "$full_moddir"/modules.order "$full_moddir"/modules.builtin "$full_moddir"/modules.builtin.modinfo \
   "$bundle/lib/modules/$kver/"
mod_paths "${INITRAMFS_MODULES[@]}" "${GUEST_MODULES[@]}" | sort -u | while read -r path; do
  rel=${path#"$work/full/"}
  mkdir -p "$bundle/${rel%/*}"
  cp "$path" "$bundle/$rel"
done
depmod -b "$bundle" "$kver"
cp "$work/full/boot/vmlinuz-$kver" "$bundle/vmlinuz"

# initramfs: a static busybox, the modules in load order, and lib/initramfs-init as /init.
ird=$work/initramfs
mkdir -p "$ird"/{bin,dev,proc,sys,newroot,mods}
cp /bin/busybox "$ird/bin/busybox"
ln -s busybox "$ird/bin/sh"
: > "$ird/mods/order"
mod_paths "${INITRAMFS_MODULES[@]}" | while read -r path; do
  b=${path##*/}
  grep -qxF "$b" "$ird/mods/order" && continue
  cp "$path" "$ird/mods/$b"
  echo "$b" >> "$ird/mods/order"
done
install -m 755 "$HERE/initramfs-init" "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$bundle/initrd.img"

echo "$kver" > "$bundle/kver"
rm -rf "$work/full"
echo ok > "$bundle/ready"
rm -rf "$dest"
mv "$bundle" "$dest"
# Bundles of other kernels or script versions that no run used for a week go (run touches `ready`).
find "$CACHE" -mindepth 2 -maxdepth 2 -name ready -mtime +7 -printf '%h\n' | while read -r old; do
  [[ $old != "$dest" ]] && { say "removing unused $old"; rm -rf "$old"; }
done
say "ready: $dest ($(du -sh "$dest" | cut -f1), initramfs $(du -h "$dest/initrd.img" | cut -f1))"
