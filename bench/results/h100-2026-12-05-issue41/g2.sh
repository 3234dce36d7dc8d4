#!/usr/bin/env bash
# Session 49, one call: threads_ptds under --block 8 times (it deadlocked in 4 of 7 runs before e558c54; a run
# alive after 30 s gets every thread's stack words written by .gpu/h/stackdump.so), then g.sh (f1's checks,
# the GPU cases, the attribution matrix).
ldconfig -p | grep -q libcudart.so.13 || export LD_LIBRARY_PATH=/usr/local/cuda/lib64
W=$PWD/build-gpu/bin/cuda-blockrun; P=$PWD/build-gpu/gpu/threads_ptds
export CUDA_BLOCKRUN_LIBDW=$PWD/build-gpu/libdw/libdw.so.1
mkdir -p $OUT/loop
for i in $(seq 1 8); do
  LD_PRELOAD=$PWD/.gpu/h/stackdump.so $W --block accumulate --report $OUT/loop/r-$i.jsonl -- $P > $OUT/loop/log-$i.txt 2>&1 &
  pid=$!
  for t in $(seq 1 60); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
  if kill -0 $pid 2>/dev/null; then
    echo "HANG run $i"; kill -USR1 $pid; sleep 3; kill -9 $pid; wait $pid 2>/dev/null
  else
    wait $pid; echo "run $i: exit $? $(grep -m1 -o 'first error: [A-Z_]*' $OUT/loop/log-$i.txt) $(grep -c . $OUT/loop/r-$i.jsonl) records"
  fi
done
unset CUDA_BLOCKRUN_LIBDW
echo "seconds: $SECONDS"
SECONDS=0 bash .gpu/g.sh
