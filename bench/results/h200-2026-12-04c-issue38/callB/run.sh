# Call B, as given to the device tool (one line there).
export BLOCKRUN_BUILD_DIR=$PWD/build-gpu; G=/tmp/gc2; mkdir -p $G
GPU_CHECK_ONLY=cases GPU_CTEST_ARGS='-j3 -E gpu_attr_' timeout 300 tools/gpu-check $G > /tmp/cases.out 2>&1
grep -E 'tests passed|tests failed|\(Failed\)|\(Skipped\)|Not Run|Timeout' $G/gpu-cases.log | tail -30; echo "seconds: $SECONDS"
cp $G/gpu-cases.log $OUT/ 2>/dev/null
GPU_CHECK_ONLY=bench BENCH_ARGS="--repetitions 4 --workloads train,transformer --configs breadcrumbs_switched,shim_switched" timeout $((560 - SECONDS)) tools/gpu-check $G > /tmp/bench2.out 2>&1
tail -30 $G/bench.log; cp -r $G/bench $OUT/bench2 2>/dev/null; echo "seconds: $SECONDS"
