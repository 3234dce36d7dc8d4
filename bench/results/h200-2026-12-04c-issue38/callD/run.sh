# Call D.
export BLOCKRUN_BUILD_DIR=$PWD/build-gpu; G=/tmp/gc4; mkdir -p $G
GPU_CHECK_ONLY=bench BENCH_ARGS="--repetitions 7 --workloads train --configs native,clb,default" timeout 280 tools/gpu-check $G > /tmp/b4.out 2>&1
grep -E "train_step|target|nothing|breadcrumbs" $G/bench.log | head -20; cp -r $G/bench $OUT/bench3; echo "seconds: $SECONDS"
