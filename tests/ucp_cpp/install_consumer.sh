#!/bin/sh
# Installs ucp_cpp (the install rules of its build directory: what `make install` does for it)
# into a scratch prefix, then builds and runs a consumer twice: through find_package(ucp_cpp)
# and through pkg-config.
#   install_consumer.sh <ucp_cpp build dir> <scratch dir> <cmake> <consumer source dir>
set -eu
build=$1 scratch=$2 cmake=$3 source=$4
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix

"$cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -P "$build/cmake_install.cmake" >"$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log"; exit 1; }
test -f "$prefix/include/ucp_cpp/ucp_cpp.hpp" || { echo "headers not installed"; exit 1; }

echo "== find_package(ucp_cpp)"
"$cmake" -S "$source" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; exit 1; }
"$cmake" --build "$scratch/cmake-build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
"$scratch/cmake-build/consumer"

echo "== pkg-config ucp_cpp"
pcdir=$(dirname "$(find "$prefix" -name ucp_cpp.pc | head -n1)")
test -n "$pcdir" || { echo "ucp_cpp.pc not installed"; exit 1; }
flags=$(PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags --libs ucp_cpp)
echo "flags: $flags"
${CXX:-c++} -o "$scratch/consumer-pc" "$source/main.cpp" $flags
"$scratch/consumer-pc"
