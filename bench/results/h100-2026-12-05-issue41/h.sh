#!/usr/bin/env bash
# Is the hang of threads_ptds under --block (H100, fb58b89's matrix) this change's, or the base's too?
# Alternates the new shim (fb58b89) and the base (df0b3fb), 4 runs each; a run still alive after 35 s
# gets gdb's backtrace of every thread, then SIGKILL.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldconfig -p | grep -q libcudart.so.13 || export LD_LIBRARY_PATH=/usr/local/cuda/lib64
export CUDA_BLOCKRUN_LIBDW=$PWD/.gpu/h/libdw.so.1
chmod +x .gpu/h/*/bin/cuda-blockrun .gpu/h/threads_ptds
P=$PWD/.gpu/h/threads_ptds
for i in 1 2 3 4; do
  for tree in new base; do
    W=$PWD/.gpu/h/$tree/bin/cuda-blockrun
    $W --block "${BLOCK:-accumulate}" --report $OUT/r-$tree-$i.jsonl -- $P > $OUT/log-$tree-$i.txt 2>&1 &
    pid=$!
    for t in $(seq 1 70); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
    if kill -0 $pid 2>/dev/null; then
      echo "HANG $tree run $i (pid $pid)"
      timeout 60 gdb -p $pid -batch -ex 'info threads' -ex 'thread apply all bt' > $OUT/bt-$tree-$i.txt 2>&1
      kill -9 $pid; wait $pid 2>/dev/null
      grep -E '^#|^Thread' $OUT/bt-$tree-$i.txt | head -80
    else
      wait $pid; echo "ended $tree run $i: exit $?  $(grep -c . $OUT/r-$tree-$i.jsonl) records; $(grep -m1 'first error' $OUT/log-$tree-$i.txt | cut -c1-150)"
    fi
  done
done
echo "seconds: $SECONDS"
