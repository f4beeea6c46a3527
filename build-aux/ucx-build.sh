#!/bin/bash
# build-aux/ucx-build.sh VERSION [--print-prefix]
#
# Builds upstream UCX VERSION from $UCX_BUILD_TARBALLS/ucx-VERSION.tar.xz (default
# /work/shared/ucx-src; a `git archive` of the release tag, so it needs ./autogen.sh) into a cached
# prefix, and prints that prefix's path on stdout (the only thing ever written to stdout; all chatter
# goes to stderr).
#
# Cache layout (root: $UCX_BUILD_CACHE, default /var/cache/ucx-gdr/ucx-build):
#   VERSION-KEY/src        the extracted tree, configured and built in place: config.h, the generated
#                          headers (uct/api/version.h...) and the internal headers (src/uct/base/*.h...)
#                          that the plugin is compiled against.  Its Makefiles name the temporary
#                          directory it was built in: it is a header tree, not for re-running make.
#   VERSION-KEY/prefix     `make install` result, configured with --prefix=<this path>
#   VERSION-KEY/build.log  autogen/configure/make/install output
#   VERSION-KEY/ready      written last (after a smoke test of prefix/bin/ucx_info): present = usable
#   VERSION-KEY.lock       flock'ed while building: concurrent callers wait, then reuse the result
# KEY = first 12 hex digits of sha256(sha256(tarball), sha256(this script)): editing either rebuilds.
# A build runs in VERSION-KEY.tmp.XXXXXX next to the final directory (installed there with DESTDIR),
# and is renamed into place when complete.  A failed build's temporary directory is kept (its path
# and the log's tail go to stderr) until the next attempt for the same key, or a successful build of
# the same VERSION under another key, removes it (built prefixes of other keys are never removed).
#
# Options:  --print-prefix  do not build: print the prefix path; exit 0 if it is built, 1 if not.
# Exit status: 0 ok; 1 not built (--print-prefix) or build failure; 2 usage.
# Missing build tools/headers (autoconf automake libtool gcc g++ make pkg-config libibverbs-dev
# librdmacm-dev libnuma-dev) are installed with apt-get when running as root; otherwise the script
# says what to install.
#
# The body is one { } block so that bash parses it all before running it (editing this file while a
# build runs cannot change what that build executes).
{
set -euo pipefail
exec 3>&1 1>&2          # fd 3 = the real stdout (the prefix path only); everything else -> stderr

say() { echo "ucx-build: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { echo "usage: ${0##*/} VERSION [--print-prefix]" >&2; exit 2; }

SELF=$(readlink -f "${BASH_SOURCE[0]}")
version='' print_only=0
for a in "$@"; do
  case "$a" in
    --print-prefix) print_only=1 ;;
    -h|--help) sed -n '2,30p' "$SELF" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    -*) usage ;;
    *) [[ -z "$version" ]] || usage; version=$a ;;
  esac
done
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-rc[0-9]+)?$ ]] || usage

tardir=${UCX_BUILD_TARBALLS:-/work/shared/ucx-src}
tarball=$tardir/ucx-$version.tar.xz
[[ -r "$tarball" ]] || die "no $tarball"
root=${UCX_BUILD_CACHE:-/var/cache/ucx-gdr/ucx-build}
[[ "$root" == /* ]] || root=$PWD/$root

tar_sha=$(sha256sum "$tarball" | cut -d' ' -f1)
if [[ -r "$tardir/SHA256SUMS" ]] && grep -q " ucx-$version.tar.xz\$" "$tardir/SHA256SUMS"; then
  grep -q "^$tar_sha  ucx-$version.tar.xz\$" "$tardir/SHA256SUMS" \
    || die "$tarball does not match $tardir/SHA256SUMS"
fi
key=$(printf '%s\n%s\n' "$tar_sha" "$(sha256sum "$SELF" | cut -d' ' -f1)" | sha256sum | cut -c1-12)
final=$root/$version-$key
prefix=$final/prefix

if [[ -f "$final/ready" ]]; then echo "$prefix" >&3; exit 0; fi
if (( print_only )); then
  say "UCX $version is not built ($final/ready missing): run ${0##*/} $version"
  echo "$prefix" >&3; exit 1
fi

mkdir -p "$root" || die "cannot create $root (set UCX_BUILD_CACHE to a writable directory)"
exec 9>"$final.lock"
if ! flock -n 9; then
  say "another build of UCX $version holds $final.lock: waiting"
  flock 9
fi
if [[ -f "$final/ready" ]]; then echo "$prefix" >&3; exit 0; fi
# We hold the lock: anything left for this key is from an interrupted or failed attempt.
rm -rf "$final" "$final".tmp.*

# ---- build dependencies ----------------------------------------------------------------------------
DEPS=(autoconf automake libtool make gcc g++ pkg-config xz-utils libibverbs-dev librdmacm-dev libnuma-dev)
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${DEPS[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" == ii* ]] || missing+=("$p")
  done
else
  for c in autoconf automake libtoolize make gcc g++ pkg-config xz; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
fi
if (( ${#missing[@]} )); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]}"
    apt_install() {
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${missing[@]}" >&2
    }
    apt_install || { apt-get update -q -o DPkg::Lock::Timeout=600 >&2 && apt_install; } \
      || die "apt-get install ${missing[*]} failed"
  else
    die "missing: ${missing[*]} (as root: apt-get install ${missing[*]})"
  fi
fi

# ---- build -----------------------------------------------------------------------------------------
t0=$(date +%s)
tmp=$(mktemp -d "$final.tmp.XXXXXX")
chmod 0755 "$tmp"       # mktemp makes it 0700: the prefix must be usable by everyone
log=$tmp/build.log
: > "$log"
failed() {
  say "FAILED: $1; last lines of $log:"
  tail -n 40 "$log" >&2
  say "the failed tree stays in $tmp until the next attempt"
  exit 1
}
step() { echo "=== $(date '+%F %T') $*" >> "$log"; }

say "building UCX $version into $final (log: $final/build.log; $(nproc) cores)"
step "extract $tarball (sha256 $tar_sha)"
mkdir "$tmp/src"
tar -xJf "$tarball" -C "$tmp/src" --strip-components=1 >> "$log" 2>&1 || failed "extracting $tarball"
[[ -x "$tmp/src/autogen.sh" && -f "$tmp/src/src/uct/base/uct_iface.h" ]] \
  || failed "$tarball is not a UCX source tree"
cd "$tmp/src"

step "./autogen.sh"
say "autogen"
./autogen.sh >> "$log" 2>&1 || failed "./autogen.sh"

# Debian 12's flags (ucx_info -b | grep CONFIGURE_FLAGS), except: logging stays at upstream's
# default (on, up to trace_poll); --disable-backtrace-detail is unknown to UCX's configure (Debian
# passes it under --disable-option-checking), --without-bfd is what it meant; no static libraries
# (halves the compile time); no GPU/Java/Go/docs; the optional kernel/FUSE features Debian's build
# lacked are disabled explicitly so that a later-installed -dev package cannot change the build.
wanted=(--disable-silent-rules --disable-maintainer-mode --disable-dependency-tracking --disable-static
        --enable-mt --with-verbs --with-rdmacm --enable-cma --enable-devel-headers --enable-examples
        --without-bfd --without-knem --without-xpmem --without-fuse3
        --without-cuda --without-rocm --without-java --without-go --disable-doxygen-doc)
help=$(./configure --help 2>>"$log") || failed "./configure --help"
flags=()
for f in "${wanted[@]}"; do
  case "$f" in
    --enable-*|--disable-*) name=${f#--*able-}; re="--(enable|disable)-$name" ;;
    --with-*|--without-*)   name=${f#--with}; name=${name#out}; name=${name#-}; re="--with(out)?-$name" ;;
  esac
  if grep -Eq -- "$re([=([:space:]]|\\[|\$)" <<< "$help"; then flags+=("$f")
  else say "configure of UCX $version has no $f: skipped"; echo "skipped (not in configure --help): $f" >> "$log"
  fi
done
step "./configure ${flags[*]} --prefix=$prefix"
say "configure ${flags[*]} --prefix=$prefix"
./configure "${flags[@]}" --prefix="$prefix" >> "$log" 2>&1 || failed "./configure (see also $tmp/src/config.log)"

step "make -j$(nproc)"
say "make -j$(nproc)"
make -j"$(nproc)" >> "$log" 2>&1 || failed "make"

step "make install DESTDIR=$tmp/destdir"
say "make install"
make install DESTDIR="$tmp/destdir" >> "$log" 2>&1 || failed "make install"
[[ -d "$tmp/destdir$prefix" ]] || failed "make install did not create $tmp/destdir$prefix"
mv -T "$tmp/destdir$prefix" "$tmp/prefix"
rm -rf "$tmp/destdir"
for b in ucx_info ucx_perftest; do
  [[ -x "$tmp/prefix/bin/$b" ]] || failed "bin/$b was not installed"
done

step "rename $tmp -> $final"
mv -T "$tmp" "$final"
tmp=$final log=$final/build.log
step "smoke test: $prefix/bin/ucx_info -v"
if ! out=$("$prefix/bin/ucx_info" -v 2>&1) || ! grep -q "^# Library version: $version\$" <<< "$out"; then
  echo "$out" >> "$log"
  mv -T "$final" "$final.tmp.failed"; tmp=$final.tmp.failed log=$tmp/build.log
  failed "$prefix/bin/ucx_info -v does not report version $version"
fi
echo "$out" >> "$log"
t1=$(date +%s)
step "done in $((t1 - t0)) s"
{
  echo "version=$version"
  echo "key=$key"
  echo "tarball=$tarball"
  echo "tarball_sha256=$tar_sha"
  echo "configure_flags=${flags[*]} --prefix=$prefix"
  echo "built=$(date -u '+%FT%TZ') seconds=$((t1 - t0)) jobs=$(nproc)"
} > "$final/ready.tmp"
mv "$final/ready.tmp" "$final/ready"
say "UCX $version built in $((t1 - t0)) s: $prefix"
# What failed or interrupted attempts of other keys (older script or tarball) left behind goes;
# built ones stay (something may be compiled against them), as do those whose lock is held.
for lk in "$root/$version"-*.lock; do
  k=${lk%.lock}
  [[ "$k" == "$final" || -f "$k/ready" ]] && continue
  [[ -e "$k" ]] || compgen -G "$k.tmp.*" > /dev/null || continue
  ( flock -n 8 || exit 0; rm -rf "$k" "$k".tmp.*; say "removed the unfinished ${k##*/}" ) 8< "$lk"
done
echo "$prefix" >&3
exit 0
}
