#!/bin/bash
# ucx-internal.sh OUTDIR [UCX_PREFIX] [UCX_SRC] [UCX_CONFIG_H]
#
# UCT components are built against UCX's *internal* headers (uct/base/*.h, ucs/...), which
# libucx-dev does not install.  Those headers are only valid for the exact UCX release that is
# installed, so this script:
#   1. finds the installed UCX version (ucx_info -v, or the given prefix's headers),
#   2. obtains the exact matching source tree: UCX_SRC if given (a directory, or a .tar.* of one,
#      extracted once into a cache), else `apt-get source ucx=<installed source version>` (adding a
#      deb-src entry for the installed suite if absent),
#   3. refuses a tree whose public headers differ from the installed ones,
#   4. writes OUTDIR/include/config.h from `ucx_info -b` (what the installed build really used),
#      and OUTDIR/ucx-src pointing at the tree, OUTDIR/ucx-version with the version.
#
# A UCX installed without its -dev and -utils packages (Ubuntu's libucx0 alone: no headers, no
# ucx_info) works too, given UCX_SRC and UCX_CONFIG_H (the defines that UCX was built with, as
# `ucx_info -b` prints them; the class-size check of the plugin verifies the result at load time):
# the version comes from the library's ucp_get_version(), the public headers from the tree (with
# the generated version headers made for that version), and OUTDIR/libdir names the libraries.
# Exit status 0 on success; on failure one line on stderr says what to do.
set -euo pipefail
out=${1:?usage: ucx-internal.sh OUTDIR [UCX_PREFIX] [UCX_SRC] [UCX_CONFIG_H]}
prefix=${2:-}
src=${3:-}
config_h=${4:-}
die() { echo "ucx-internal: $*" >&2; exit 1; }

mkdir -p "$out/include"
out=$(cd "$out" && pwd)

if [[ -n "$prefix" && -x "$prefix/bin/ucx_info" ]]; then ucx_info=$prefix/bin/ucx_info
elif [[ -z "$prefix" || "$prefix" == /usr ]]; then ucx_info=$(command -v ucx_info || true)
else ucx_info=""; fi
incdir=${prefix:+$prefix/include}; incdir=${incdir:-/usr/include}
headerless=0
if [[ -z "$ucx_info" || ! -f "$incdir/uct/api/uct.h" ]]; then
  hint="or, for a UCX installed without headers and tools, --with-ucx-src=SRC --with-ucx-config=CONFIG_H"
  [[ -n "$ucx_info" ]] || [[ -n "$src" && -n "$config_h" ]] || die "ucx_info not found: install ucx-utils (apt-get install ucx-utils libucx-dev) or pass --with-ucx=DIR, $hint"
  [[ -f "$incdir/uct/api/uct.h" ]] || [[ -n "$src" && -n "$config_h" ]] || die "UCX headers not found under $incdir: install libucx-dev, $hint"
  [[ -f "$config_h" ]] || die "--with-ucx-config=$config_h: no such file"
  headerless=1
fi

if ((headerless)); then
  # the library itself says what it is
  libdir=""
  for d in ${prefix:+$prefix/lib $prefix/lib64} $(ldconfig -p 2>/dev/null | awk '/libucp\.so\.0 .*x86-64/{print $NF}' | xargs -r -n1 dirname); do
    [[ -e "$d/libucp.so.0" ]] && { libdir=$(cd "$d" && pwd -P); break; }
  done
  [[ -n "$libdir" ]] || die "no libucp.so.0 under ${prefix:-the linker search path}: is UCX installed?"
  printf '%s\n' 'void ucp_get_version(unsigned*, unsigned*, unsigned*);' \
      'int printf(const char*, ...);' \
      'int main(void) { unsigned a, b, c; ucp_get_version(&a, &b, &c); printf("%u.%u.%u", a, b, c); return 0; }' \
    | cc -x c - -x none -o "$out/ucp-version" "$libdir/libucp.so.0" -Wl,-rpath,"$libdir" \
    || die "cannot build a program against $libdir/libucp.so.0"
  ver=$("$out/ucp-version") || die "$libdir/libucp.so.0: ucp_get_version() failed"
  echo "$libdir" > "$out/libdir"
else
  rm -f "$out/libdir"
  # "# Version 1.13.1" (<= 1.16) or "# Library version: 1.18.1" (later)
  ver=$("$ucx_info" -v | grep -m1 -oiE 'version:? +[0-9]+\.[0-9]+\.[0-9]+' | grep -oE '[0-9.]+$' || true)
  [[ -n "$ver" ]] || die "cannot read the UCX version from '$ucx_info -v'"
  hdr_ver=$(awk '/define UCT_VERNO_MAJOR/{M=$3} /define UCT_VERNO_MINOR/{m=$3} END{print M"."m}' "$incdir/uct/api/version.h")
  [[ "${ver%.*}" == "$hdr_ver" ]] || die "installed UCX library is $ver but headers in $incdir are $hdr_ver"
fi

if [[ -z "$src" ]]; then
  cache=${GDR_UCX_SRC_CACHE:-$out}
  # only a UCX that a package installed has a source package: a private build under some prefix
  # may sit beside a distro UCX of another version
  if dpkg-query -S "$(readlink -f "$ucx_info")" >/dev/null 2>&1 &&
     pkgver=$(dpkg-query -W -f='${source:Version}' libucx0 2>/dev/null) && [[ -n "$pkgver" ]]; then :; else
    die "UCX $ver is not from a Debian package: pass --with-ucx-src=DIR|TARBALL (the source of UCX $ver)"
  fi
  upstream=${pkgver%-*}; upstream=${upstream#*:}
  src=$cache/ucx-$upstream
  if [[ ! -f "$src/src/uct/base/uct_iface.h" || ! -f "$src/.gdr-pkgver" || "$(cat "$src/.gdr-pkgver")" != "$pkgver" ]]; then
    rm -rf "$src"
    command -v dpkg-source >/dev/null || die "dpkg-source missing: apt-get install dpkg-dev (or ./configure --install-deps)"
    if ! apt-get source --print-uris -qq "ucx=$pkgver" >/dev/null 2>&1 || \
       [[ -z "$(apt-get source --print-uris -qq "ucx=$pkgver" 2>/dev/null)" ]]; then
      [[ $(id -u) == 0 ]] || die "no deb-src entry for UCX $pkgver and not root: add one, or pass --with-ucx-src=DIR"
      . /etc/os-release
      echo "ucx-internal: adding deb-src for $VERSION_CODENAME (/etc/apt/sources.list.d/ucx-gdr-src.sources)" >&2
      cat > /etc/apt/sources.list.d/ucx-gdr-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
      apt-get update -qq >&2 || die "apt-get update failed"
    fi
    echo "ucx-internal: fetching source ucx=$pkgver" >&2
    (cd "$cache" && apt-get source -qq "ucx=$pkgver" >/dev/null 2>&1) || die "apt-get source ucx=$pkgver failed (the archive lists it but cannot serve it?): pass --with-ucx-src=DIR|TARBALL (the source of UCX $ver)"
    [[ -f "$src/src/uct/base/uct_iface.h" ]] || die "apt-get source did not produce $src"
    echo "$pkgver" > "$src/.gdr-pkgver"
  fi
fi
# A tarball (upstream's release, or `git archive` of a tag): extracted once, keyed by its content
if [[ -f "$src" ]]; then
  tarball=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
  key=$(sha256sum "$tarball" | cut -c1-12)
  cache=${GDR_UCX_SRC_CACHE:-$out}
  dest=$cache/ucx-src-$key
  if [[ ! -f "$dest/.gdr-extracted" ]]; then
    rm -rf "$dest" "$dest.tmp"; mkdir -p "$dest.tmp"
    tar -xf "$tarball" -C "$dest.tmp" --strip-components=1 \
      || die "cannot extract $tarball (a UCX source tarball?)"
    echo "$tarball" > "$dest.tmp/.gdr-extracted"
    mv "$dest.tmp" "$dest"
  fi
  src=$dest
fi
[[ -d "$src" ]] || die "UCX source $src: no such directory or tarball"
src=$(cd "$src" && pwd)
[[ -f "$src/src/uct/base/uct_iface.h" ]] || die "$src is not a UCX source tree (no src/uct/base/uct_iface.h)"

if ((headerless)); then
  # Nothing installed to compare with: the tree must at least be this release
  tree_ver=$(grep -oE 'define\(\[ucx_ver_(major|minor|patch)\], *[0-9]+' "$src/configure.ac" \
             | grep -oE '[0-9]+$' | paste -sd.)
  [[ "$tree_ver" == "$ver" ]] || die "$src is UCX ${tree_ver:-?}, the installed library is $ver"
  IFS=. read -r major minor patch <<<"$ver"
  for h in uct/api/version.h ucp/api/ucp_version.h; do
    mkdir -p "$out/include/$(dirname "$h")"
    sed -e "s/@MAJOR_VERSION@/$major/g; s/@MINOR_VERSION@/$minor/g; s/@PATCH_VERSION@/$patch/g" \
        -e "s/@EXTRA_VERSION@//g; s/@VERSION@/$ver/g; s/@SCM_VERSION@/0000000/g; s/@SCM_BRANCH@//g" \
        "$src/src/$h.in" > "$out/include/$h"
  done
  { echo "/* generated by build-aux/ucx-internal.sh from $config_h (UCX $ver, no ucx_info here) */"
    echo "#ifndef GDR_UCX_CONFIG_H"; echo "#define GDR_UCX_CONFIG_H"
    echo "#ifndef _GNU_SOURCE"; echo "#define _GNU_SOURCE 1"; echo "#endif"
    grep '^#define' "$config_h" | grep -v 'UCX_CONFIG_H'
    echo "#endif"; } > "$out/include/config.h"
  echo "$src" > "$out/ucx-src"
  echo "$ver" > "$out/ucx-version"
  echo "ucx-internal: UCX $ver in $libdir (no headers installed: the tree's, with version headers for $ver), source $src, build defines from $config_h" >&2
  exit 0
fi

# Every installed public header must be byte-identical to the tree's copy (the generated version
# headers are not in a source tree: those come from the installation).
# A distribution's patches may touch public headers without touching what the plugin builds
# on; such differences are accepted only where reviewed, per package version, in this file:
reviewed=$(dirname "${BASH_SOURCE[0]}")/ucx-src-differences
pkgver=${pkgver:-$(dpkg-query -S "$(readlink -f "$ucx_info")" >/dev/null 2>&1 &&
                   dpkg-query -W -f='${source:Version}' libucx0 2>/dev/null || true)}
nbad=0; nchk=0; nreviewed=0; first=
while IFS= read -r -d '' h; do
  rel=${h#$incdir/}
  case "$rel" in uct/api/version.h|ucp/api/ucp_version.h|ucs/config/ucm_config.h) continue;; esac
  [[ -f "$src/src/$rel" ]] || continue
  nchk=$((nchk+1))
  cmp -s "$h" "$src/src/$rel" && continue
  if [[ -n "${pkgver:-}" ]] &&
     awk -v v="$pkgver" -v h="$rel" '$1 == v && $2 == h {ok = 1} END {exit !ok}' "$reviewed"; then
    nreviewed=$((nreviewed+1)); continue
  fi
  nbad=$((nbad+1)); first=${first:-$rel}
done < <(find "$incdir/ucs" "$incdir/uct" "$incdir/ucp" -name '*.h' -print0)
(( nchk > 20 )) || die "only $nchk public headers could be compared: is $src UCX $ver?"
(( nbad == 0 )) || die "$nbad of $nchk public headers in $src differ from UCX $ver's in $incdir (first: $first): not the source of this UCX"

# config.h: exactly the defines of the installed build
{
  echo "/* generated by build-aux/ucx-internal.sh from '$ucx_info -b' (UCX $ver) */"
  echo "#ifndef GDR_UCX_CONFIG_H"
  echo "#define GDR_UCX_CONFIG_H"
  echo "#ifndef _GNU_SOURCE"
  echo "#define _GNU_SOURCE 1"
  echo "#endif"
  "$ucx_info" -b | grep '^#define' | grep -v 'UCX_CONFIG_H'
  echo "#endif"
} > "$out/include/config.h.tmp"
mv "$out/include/config.h.tmp" "$out/include/config.h"
echo "$src" > "$out/ucx-src"
echo "$ver" > "$out/ucx-version"
reviewed_note=""
((nreviewed == 0)) || reviewed_note=", $nreviewed differ as reviewed for $pkgver in build-aux/ucx-src-differences"
echo "ucx-internal: UCX $ver, source $src ($((nchk-nreviewed)) public headers identical$reviewed_note)" >&2
