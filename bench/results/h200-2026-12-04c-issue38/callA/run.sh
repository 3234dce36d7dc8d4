#!/usr/bin/env bash
# Session 38, call A: the attribution matrix (11 cases, default column), then the default run against
# CUDA_LAUNCH_BLOCKING=1 (bench/harness.py: native, clb, shim = --breadcrumbs=0, default = no mode flag).
cat build-gpu/source-commit
nvidia-smi -L; python3 -c 'import torch; print(torch.__version__)'
export BLOCKRUN_BUILD_DIR=$PWD/build-gpu
G=/tmp/gc; mkdir -p $G
GPU_CHECK_ONLY=attribution GPU_CTEST_ARGS='-j6' timeout 320 tools/gpu-check $G > /tmp/attr.out 2>&1
grep -E 'tests passed|tests failed|\(Failed\)|Timeout' $G/attribution.log | tail -15; cat $G/matrix.md
echo "wrong_exact=no: $(grep -c 'wrong_exact=no' $G/matrix.txt); wrong_exact=yes: $(grep -c 'wrong_exact=yes' $G/matrix.txt)"
grep -E '^(WRONG|FAILED|WARN)' $G/attribution.log | cut -c1-300 | head -40
echo "seconds: $SECONDS"
cp $G/matrix.md $G/matrix.txt $OUT/ 2>/dev/null
tar czf $OUT/attribution.tar.gz -C $G . /tmp/attr.out 2>/dev/null
left=$((575 - SECONDS))
echo "bench budget: $left s"
GPU_CHECK_ONLY=bench BENCH_ARGS="--repetitions 3 --workloads launch_loop,train,matmul --configs native,clb,shim,default" \
  timeout $left tools/gpu-check $G > /tmp/bench.out 2>&1
tail -40 $G/bench.log
cp -r $G/bench $OUT/bench 2>/dev/null
echo "seconds: $SECONDS"
