#!/usr/bin/env bash
# Host enqueue vs GPU span of the MLP step, per configuration, rounds alternated.
root=$PWD; SHIM=$root/build-gpu/lib/libcuda_blockrun.so
for r in 1 2 3 4 5; do for c in native shim crumbs crumbs8 noline; do
  env=(X=1)
  [ $c = shim ] && env=(LD_PRELOAD=$SHIM CUDA_BLOCKRUN_SUMMARY=0)
  [ $c = crumbs ] && env=(LD_PRELOAD=$SHIM CUDA_BLOCKRUN_SUMMARY=0 CUDA_BLOCKRUN_BREADCRUMBS=1)
  [ $c = crumbs8 ] && env=(LD_PRELOAD=$SHIM CUDA_BLOCKRUN_SUMMARY=0 CUDA_BLOCKRUN_BREADCRUMBS=1 CUDA_BLOCKRUN_BREADCRUMB_EVERY=8)
  [ $c = noline ] && env=(LD_PRELOAD=$SHIM CUDA_BLOCKRUN_SUMMARY=0 CUDA_BLOCKRUN_BREADCRUMBS=1 CUDA_BLOCKRUN_CALLSITES=none)
  echo "$r $c $(env "${env[@]}" timeout 60 python3 .gpu/split.py 2>&1 | grep SPLIT)"
done; done 2>&1 | tee $OUT/split.log
