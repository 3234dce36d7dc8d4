# Call C (after tests/gpu/breadcrumbs_case.sh took `NAME thread#N` as well as `NAME#N`).
export BLOCKRUN_BUILD_DIR=$PWD/build-gpu; G=/tmp/gc3; mkdir -p $G
GPU_CHECK_ONLY=cases GPU_CTEST_ARGS='-R gpu_breadcrumbs_many' timeout 200 tools/gpu-check $G > /tmp/c3.out 2>&1
grep -E 'OK:|FAILED|tests passed|tests failed' $G/gpu-cases.log | cut -c1-400 | tail -10; cp $G/gpu-cases.log $OUT/gpu-cases-rerun.log
