#!/usr/bin/env bash
# The shim's cost in a distributed job (issue 10), on a machine with 2 GPUs: the 2-rank DDP training loop of
# tests/gpu/ddp_fault.py in --bench mode (no fault; 30 warm-up steps, then 200 steps timed in 10 chunks
# between torch.cuda.synchronize() calls; rank 0 prints the median chunk's milliseconds per step) under
# torchrun, in three configurations:
#   native                  torchrun ... --no_python python3 ddp_fault.py --bench --fault-step -1
#   shim, nothing blocked   torchrun ... --no_python cuda-blockrun --breadcrumbs=0 -- python3 ddp_fault.py ...
#   shim, --breadcrumbs     torchrun ... --no_python cuda-blockrun --breadcrumbs -- python3 ddp_fault.py ...
# Each repetition runs all three, in an order rotated by one every repetition (so that none always runs first,
# on a colder machine); each run is limited to 120 s (a normal one takes about 20). Prints each run's figure as
# it comes, then a Markdown table: median ms per step over the runs (min-max, n) and the ratio to native.
#   bench/run_ddp.sh <build-dir> [repetitions]        (default 3; PYTHON=... picks the interpreter)
set -uo pipefail
build=$1
repetitions=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
script=$root/tests/gpu/ddp_fault.py
wrapper=$build/bin/cuda-blockrun
python=${PYTHON:-python3}
[ -x "$wrapper" ] || { echo "no wrapper at $wrapper: give the build directory"; exit 2; }
gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null)
[ "${gpus:-0}" -ge 2 ] || { echo "this benchmark needs 2 GPUs; $python's PyTorch sees ${gpus:-none}"; exit 1; }
if command -v torchrun >/dev/null 2>&1; then
  torchrun=(torchrun)
else
  torchrun=("$python" -m torch.distributed.run)  # what the torchrun script runs, where it is not on PATH
fi

names=("native" "shim, nothing blocked" "shim, --breadcrumbs")
# The same launcher and interpreter in every configuration: only the per-rank command differs.
run() {
  local shim=()
  case $1 in
    1) shim=("$wrapper" --breadcrumbs=0 --) ;;
    2) shim=("$wrapper" --breadcrumbs --) ;;
  esac
  timeout -k 10 120 "${torchrun[@]}" --standalone --nproc_per_node 2 --no_python "${shim[@]}" \
    "$python" "$script" --bench --fault-step -1 2>&1
}

declare -A times
failures=0
for ((r = 0; r < repetitions; ++r)); do
  for ((i = 0; i < ${#names[@]}; ++i)); do
    c=$(((i + r) % ${#names[@]}))
    output=$(run "$c")
    status=$?
    ms=$(printf '%s\n' "$output" | sed -n 's/.*BENCH ddp_step_ms \([0-9.]*\).*/\1/p' | head -1)
    if [ "$status" -ne 0 ] || [ -z "$ms" ]; then
      echo "run $((r + 1)), ${names[$c]}: FAILED (exit status $status, no BENCH line); its last lines:"
      printf '%s\n' "$output" | tail -n 20
      failures=$((failures + 1))
      continue
    fi
    echo "run $((r + 1)), ${names[$c]}: $ms ms per step"
    times[$c]+="$ms "
  done
done

# median, min, max and count of the numbers on standard input (one per word).
stats() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1}
  END { if (NR) printf "%s %s %s %d\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, a[1], a[NR], NR }'; }
read -r native _ <<<"$(echo "${times[0]:-}" | stats)"
printf '\n2-rank DDP step (tests/gpu/ddp_fault.py --bench), %s\n\n' \
  "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, -)"
printf '| configuration | ms per step, median (min-max, n) | ratio to native |\n|---|---|---|\n'
for ((c = 0; c < ${#names[@]}; ++c)); do
  read -r median low high count <<<"$(echo "${times[$c]:-}" | stats)"
  if [ -z "${median:-}" ]; then
    printf '| %s | no run succeeded | - |\n' "${names[$c]}"
  elif [ -z "${native:-}" ]; then
    printf '| %s | %.3f (%.3f-%.3f, %d) | - |\n' "${names[$c]}" "$median" "$low" "$high" "$count"
  else
    printf '| %s | %.3f (%.3f-%.3f, %d) | %.3f |\n' "${names[$c]}" "$median" "$low" "$high" "$count" \
      "$(awk -v m="$median" -v n="$native" 'BEGIN { print m / n }')"
  fi
  unset median low high count
done
[ "$failures" -eq 0 ] || { echo "$failures run(s) failed"; exit 1; }
# SPDX-License-Identifier: MIT
