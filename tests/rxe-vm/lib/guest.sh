# Sourced by tests/rxe-vm/run and tests/fabric/run: what booting a guest takes.
#   ensure_host_packages PKG...   installs what is missing (as root) or fails naming it
#   prepare_bundle                finds (or builds, once, under a lock) the kernel + initramfs bundle
#                                 the guests boot: sets BUNDLE (its directory), KVER (its release)
#   guest_qemu_args CTL BACKEND   the qemu command line of one guest into the array QEMU_ARGS
# Needs: LIB (this folder), CACHE (the cache folder), and a function vm_failed MESSAGE that
# reports and exits.
# The bundle's name carries a hash of the scripts that build it, so editing them rebuilds it, and
# two checkouts with different scripts can share one cache.

# The host packages both harnesses need to build and boot guests, and what commands typically run
# inside them (the guest uses the host's userland).  busybox-static: the initramfs has no
# libraries, so busybox must be static.
RXE_HOST_PACKAGES=(qemu-system-x86 busybox-static ibverbs-providers ibverbs-utils perftest
                   rdmacm-utils iproute2 kmod cpio)

# ensure_host_packages PKG...: installs the missing ones (as root), or fails naming them
ensure_host_packages() {
  local missing
  missing=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null \
            | PKGS="$*" awk '$1 == "ii" {ok[$2] = 1}
                END {n = split(ENVIRON["PKGS"], p, " "); for (i = 1; i <= n; i++) if (!ok[p[i]]) print p[i]}')
  [[ -z $missing ]] && return 0
  missing=$(echo $missing)
  (( EUID == 0 )) || vm_failed "missing packages: $missing (run as root, or: apt-get install $missing)"
  echo "rxe-vm: installing $missing" >&2
  local -a apt=(env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends -o Dpkg::Use-Pty=0)
  # shellcheck disable=SC2086
  "${apt[@]}" install $missing >&2 \
    || { apt-get -q update >&2 && "${apt[@]}" install $missing >&2; } \
    || vm_failed "apt-get install $missing failed"
}

find_bundle() {
  local b kpat=${RXE_VM_KERNEL:-}
  kpat=${kpat#linux-image-}
  for b in "$CACHE"/$kpat*-"$BUNDLE_KEY"/ready; do
    [[ -f $b ]] && { BUNDLE=${b%/ready}; return 0; }
  done
  return 1
}

# prepare_bundle: sets BUNDLE and KVER, building the bundle if no ready one matches
prepare_bundle() {
  command -v dpkg-query > /dev/null || vm_failed "needs a Debian host (dpkg, apt-get)"
  mkdir -p "$CACHE" || vm_failed "cannot create the cache $CACHE"
  CACHE=$(cd "$CACHE" && pwd -P)
  BUNDLE_KEY=$(cat "$LIB/setup.sh" "$LIB/initramfs-init" | sha256sum | cut -c1-12)
  if ! find_bundle; then
    exec 9> "$CACHE/.lock" || vm_failed "cannot write $CACHE/.lock"
    flock 9   # another run may be building the same bundle: wait for it, then use its result
    find_bundle || bash "$LIB/setup.sh" "$CACHE" "$BUNDLE_KEY" && find_bundle \
      || vm_failed "building the VM kernel bundle failed"
    exec 9>&-
  fi
  KVER=$(< "$BUNDLE/kver")
  touch "$BUNDLE/ready" 2>/dev/null   # last use: setup.sh prunes bundles unused for a week
}

# guest_qemu_args CTL BACKEND [KERNEL_LOG]: one guest's qemu command line (without the program)
# into QEMU_ARGS.  CTL is its control directory (shared as tag ctl: guest-init.sh, params, env,
# cmd in; ready, rc, error out); its serial console goes to CTL/boot.log.  The command's stdout
# and stderr leave through two virtio-serial ports that qemu writes as BACKEND: `pipe` (the FIFOs
# CTL/out.out and CTL/err.out, streamed by the caller) or `file` (CTL/out, CTL/err).
# Knobs: RXE_VM_ACCEL (TCG by default: KVM is opt-in because a /dev/kvm that exists is no promise
# that it works: nested hosts, MSR errors with -cpu host), RXE_VM_CPU, RXE_VM_SMP, RXE_VM_MEM.
guest_qemu_args() {
  local ctl=$1 backend=$2 kernel_log=${3:-quiet loglevel=4}
  local accel=${RXE_VM_ACCEL:-tcg,thread=multi,tb-size=256} cpu
  case $accel in kvm*) cpu=${RXE_VM_CPU:-host} ;; *) cpu=${RXE_VM_CPU:-max} ;; esac
  QEMU_ARGS=(-pidfile "$ctl/qemu.pid"
    -M pc -accel "$accel" -cpu "$cpu" -smp "${RXE_VM_SMP:-2}" -m "${RXE_VM_MEM:-2G}"
    -nodefaults -no-user-config -display none -no-reboot
    -kernel "$BUNDLE/vmlinuz" -initrd "$BUNDLE/initrd.img"
    -append "console=ttyS0 $kernel_log panic=-1 mitigations=off tsc=reliable no_timer_check"
    -serial "file:$ctl/boot.log"
    -device virtio-serial-pci
    -chardev "$backend,id=out,path=$ctl/out" -device virtserialport,chardev=out,name=rxevm.out
    -chardev "$backend,id=err,path=$ctl/err" -device virtserialport,chardev=err,name=rxevm.err
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$BUNDLE,mount_tag=kroot,security_model=none,readonly=on"
    -virtfs "local,path=$ctl,mount_tag=ctl,security_model=none")
}

# The checkout where a guest cannot see it: a guest mounts its own tmpfs on /tmp, /var/tmp and
# /dev/shm, so a clone under those shows only the shared working directory.  hidden_checkout CWD
# sets SRC_SHARE (qemu arguments: the checkout, read-only, tag "src") and SRC_PARAM (guest-init's
# RXE_SRC line) when the checkout lies there and outside CWD; both empty otherwise.
hidden_checkout() {
  local cwd=$1 src
  src=$(cd "$LIB/../../.." && pwd -P)
  SRC_SHARE=() SRC_PARAM=
  case $src in /tmp/*|/var/tmp/*|/dev/shm/*) ;; *) return 0 ;; esac
  case $cwd/ in "$src"/*) [[ $cwd == "$src" ]] && return 0 ;; esac
  case $src/ in "$cwd"/*) return 0 ;; esac   # the working directory holds the checkout
  SRC_SHARE=(-virtfs "local,path=$src,mount_tag=src,security_model=none,readonly=on,multidevs=remap")
  printf -v SRC_PARAM 'RXE_SRC=%q\n' "$src"
}
