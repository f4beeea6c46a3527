#!/bin/sh
# Installs ucp_cpp, both modules (the install rules of their build directories: what `make
# install` does for them -- the wrapper, the collectives), into a scratch prefix, then builds and
# runs a consumer twice: through find_package(ucp_cpp) and through pkg-config.
#   install_consumer.sh <scratch dir> <cmake> <consumer source dir> <module build dir>...
set -eu
scratch=$1 cmake=$2 source=$3
shift 3
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix

for build in "$@"; do
  "$cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -P "$build/cmake_install.cmake" >>"$scratch/install.log" 2>&1 ||
    { cat "$scratch/install.log"; exit 1; }
done
test -f "$prefix/include/ucp_cpp/ucp_cpp.hpp" || { echo "headers not installed"; exit 1; }
test -f "$prefix/include/ucp_cpp/coll/coll.hpp" || { echo "collectives' headers not installed"; exit 1; }

echo "== find_package(ucp_cpp)"
"$cmake" -S "$source" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; exit 1; }
"$cmake" --build "$scratch/cmake-build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
"$scratch/cmake-build/consumer"
"$scratch/cmake-build/consumer_coll"

# pkg-config: the wrapper alone, then the collectives (Requires: ucp_cpp)
pcdir=$(dirname "$(find "$prefix" -name ucp_cpp.pc | head -n1)")
for module in ucp_cpp:main ucp_cpp_coll:coll; do
  pc=${module%%:*} program=${module#*:}
  echo "== pkg-config $pc"
  test -f "$pcdir/$pc.pc" || { echo "$pc.pc not installed"; exit 1; }
  flags=$(PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags --libs "$pc")
  echo "flags: $flags"
  ${CXX:-c++} -o "$scratch/consumer-pc-$program" "$source/$program.cpp" $flags
  "$scratch/consumer-pc-$program"
done
