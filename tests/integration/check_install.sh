#!/bin/sh
# After `cmake --install`, the installed wrapper finds the installed shim (not the build tree's) and
# runs a program under it.
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
preload=$("$prefix/bin/cuda-blockrun" --block all -- /bin/sh -c 'echo "$LD_PRELOAD"')
case $preload in
  "$prefix"/*/libcuda_blockrun.so) echo "ok: installed wrapper preloads $preload" ;;
  *) echo "installed wrapper preloads '$preload', not the installed shim under $prefix"; exit 1 ;;
esac
