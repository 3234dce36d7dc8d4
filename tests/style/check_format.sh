#!/usr/bin/env bash
# The tree is clang-format clean (ctest `clang_format`, label `style`): every C and C++ file of the checkout, against
# the project's .clang-format, with the clang-format CI installs (Debian's, 14). Prints each file that is not, and
# how to fix it. Left out: the CUDA sources (*.cu: clang-format 14 breaks `<<<...>>>` launches apart) and the
# scripts kept with benchmark results (bench/results/: a record of what ran, never edited).
#   check_format.sh SOURCE_DIR [CLANG_FORMAT]
# Skips (77) where clang-format is missing: tools/dev installs it, so CI always checks.
set -u
source_dir=$1
clang_format=${2:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "SKIPPED: $clang_format is not installed (apt-get install -y clang-format)"
  exit 77
fi
cd "$source_dir" || exit 1
# The tracked files where this is a git checkout (nothing a build or an editor left beside them), else every file.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.cpp' '*.h' ':!:bench/results/**')
else
  mapfile -t files < <(find . \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) -not -path './bench/results/*' \
                         -not -path './build*' | sed 's|^\./||')
fi
existing=()
for file in "${files[@]}"; do
  [ -f "$file" ] && existing+=("$file")  # not a file deleted in the working tree and not yet in git
done
# One clang-format for all the files; it names each place that is not clean as FILE:LINE:COLUMN: error.
output=$("$clang_format" --dry-run --Werror "${existing[@]}" 2>&1)
formatted=$?
unclean=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' <<<"$output" | sort -u)
if [ $formatted -ne 0 ] && [ -z "$unclean" ]; then
  echo "$clang_format failed: $output"
  exit 1
fi
if [ -n "$unclean" ]; then
  while read -r file; do echo "not clang-format clean: $file (clang-format -i $file)"; done <<<"$unclean"
  exit 1
fi
echo "${#existing[@]} files clang-format clean"
exit 0
# SPDX-License-Identifier: MIT
