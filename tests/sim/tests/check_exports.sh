#!/bin/sh
# Checks the file names, SONAMEs, exported names and ELF version nodes of the simulated CUDA libraries.
# Usage: check_exports.sh <sim lib dir> <CUDA toolkit root>
set -u
lib="$1"
cuda="$2"
fail=0
err() { echo "FAIL: $*"; fail=1; }

for f in libcuda.so.1 libcudart.so.13 libcublas.so.13; do
  [ -f "$lib/$f" ] && [ ! -L "$lib/$f" ] || err "$lib/$f is not a regular file"
  readelf -d "$lib/$f" | grep -q "SONAME.*\[$f\]" || err "$f: SONAME is not $f"
done

# Driver: unversioned symbols. Runtime and cuBLAS: every symbol in its version node.
nm -D --defined-only "$lib/libcuda.so.1" | awk '{print $3}' | grep -q '@' && err "libcuda.so.1 has versioned symbols"
for pair in libcudart.so.13:cuda libcublas.so.13:cublas; do
  f=${pair%%:*}
  bad=$(nm -D --defined-only "$lib/$f" | awk '{print $3}' | grep -v "^$f\$" | grep -v "@@$f\$")
  [ -z "$bad" ] || err "$f: symbols outside version node $f: $bad"
done

# Every exported name also exists in the real library (when the toolkit has it), so callers bind the same names.
compare() {
  sim="$1"; real="$2"
  [ -f "$real" ] || { echo "skip: $real not present"; return; }
  nm -D --defined-only "$real" | awk '{print $3}' | sed 's/@.*//' | sort -u > /tmp/sim_real_$$.txt
  extra=$(nm -D --defined-only "$sim" | awk '{print $3}' | sed 's/@.*//' | grep -v '^simWriteStats$' \
          | grep -v '^libcu' | sort -u | comm -23 - /tmp/sim_real_$$.txt)
  rm -f /tmp/sim_real_$$.txt
  [ -z "$extra" ] || err "$(basename "$sim"): names the real library does not export: $extra"
}
compare "$lib/libcuda.so.1" "$cuda/lib64/stubs/libcuda.so"
compare "$lib/libcudart.so.13" "$cuda/lib64/libcudart.so.13"
compare "$lib/libcublas.so.13" "$cuda/lib64/libcublas.so.13"

[ $fail -eq 0 ] && echo "exports OK"
exit $fail
# SPDX-License-Identifier: MIT
