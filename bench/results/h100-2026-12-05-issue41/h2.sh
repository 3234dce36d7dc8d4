#!/usr/bin/env bash
# The hang of threads_ptds under --block with fb58b89's shim: up to 10 runs; a run alive after 30 s has every
# thread's backtrace written (stackdump.so, SIGUSR1) into its log, then SIGKILL. Stops after two hangs.
ldconfig -p | grep -q libcudart.so.13 || export LD_LIBRARY_PATH=/usr/local/cuda/lib64
if [ -z "$NOLIBDW" ]; then export CUDA_BLOCKRUN_LIBDW=$PWD/.gpu/h/libdw.so.1; else export CUDA_BLOCKRUN_LIBDW=off; mkdir -p $OUT; fi
chmod +x .gpu/h/*/bin/cuda-blockrun .gpu/h/threads_ptds
P=$PWD/.gpu/h/threads_ptds; hangs=0
for i in $(seq 1 ${RUNS:-6}); do
  W=$PWD/.gpu/h/new/bin/cuda-blockrun
  LD_PRELOAD=$PWD/.gpu/h/stackdump.so $W --block "${BLOCK:-accumulate}" --report $OUT/r-$i.jsonl -- $P > $OUT/log-$i.txt 2>&1 &
  pid=$!
  for t in $(seq 1 60); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
  if kill -0 $pid 2>/dev/null; then
    echo "HANG run $i (pid $pid)"; hangs=$((hangs + 1))
    for t in /proc/$pid/task/*; do echo "$t $(cat $t/comm) wchan=$(cat $t/wchan 2>/dev/null) syscall=$(cut -d' ' -f1 $t/syscall 2>/dev/null)"; done
    kill -USR1 $pid; sleep 3; kill -9 $pid; wait $pid 2>/dev/null
    wc -l $OUT/log-$i.txt
    grep -o "\"type\":\"[a-z_]*\"" $OUT/r-$i.jsonl | tr "\n" " "
    [ $hangs -ge 1 ] && break
  else
    wait $pid; echo "ended run $i: exit $?"
  fi
done
echo "seconds: $SECONDS"
if [ -z "$NOLIBDW" ]; then echo "=== without libdw"; NOLIBDW=1 RUNS=5 OUT=$OUT/nolibdw bash $0; fi
