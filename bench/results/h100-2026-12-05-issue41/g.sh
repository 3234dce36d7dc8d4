#!/usr/bin/env bash
# Session 48, one call (device time is short): f1's checks, then f2's attribution matrix.
# Was f1: the new pieces on the real stack (driver features, environment errors, _exit, the trace's
# bound, the demo), then the GPU cases.
cat build-gpu/source-commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export BLOCKRUN_BUILD_DIR=$PWD/build-gpu
if [ -f build-gpu/libdw/libdw.so.1 ]; then export CUDA_BLOCKRUN_LIBDW=$PWD/build-gpu/libdw/libdw.so.1; fi
ldconfig -p | grep -q libcudart.so.13 || export LD_LIBRARY_PATH=/usr/local/cuda/lib64
W=$PWD/build-gpu/bin/cuda-blockrun; D=$PWD/build-gpu/bin/demo-stencil
T=/tmp/f1; mkdir -p $T; cd $T
echo "== --version"; $W --version
echo "== demo, the default run"; $W -- $D 2>&1 | grep -E "first error|in kernel|found by|launched at|driver" ; echo "exit ${PIPESTATUS[0]}"
echo "== demo, --localize"; $W --localize -- $D 2>&1 | grep -E "localize: culprit|launched at|error:|found in" | tail -5
echo "== no device (CUDA_VISIBLE_DEVICES=), --localize on the demo"
CUDA_VISIBLE_DEVICES= $W --localize -- $D 2>&1 | tail -8; echo "exit ${PIPESTATUS[0]}"
echo "== no device, torch, with a report"
CUDA_VISIBLE_DEVICES= $W --report nodev.jsonl -- python3 -c 'import torch; torch.zeros(1, device="cuda")' 2>&1 | grep -E "cuda-blockrun|Error" | head -8
$W report nodev.jsonl 2>&1 | head -12; echo "report exit $?"
echo "== os._exit after CUDA work, with a report and a trace"
$W --report ex.jsonl --trace ex.json -- python3 -c 'import os, torch; x = torch.ones(4, device="cuda") * 2; torch.cuda.synchronize(); print("sum", x.sum().item(), flush=True); os._exit(0)' 2>&1 | tail -3; echo "exit ${PIPESTATUS[0]}"
grep -c '"summary"\|"record":"summary"' ex.jsonl; tail -c 300 ex.jsonl; echo
python3 -c 'import json; d = json.load(open("ex.json")); print("trace events", len(d["traceEvents"]), d.get("otherData", {}))' 2>&1 | cut -c1-400
$W report ex.jsonl 2>&1 | tail -4; echo "report exit $?"
echo "== the trace of a training loop (500 launches a step), SIGTERM mid-run"
(GPU_CASE_RAISE=0 timeout -s TERM 12 $W --trace tr.json -- python3 $OLDPWD/tests/gpu/torch_embedding_train.py > tr.log 2>&1; echo "exit $?")
python3 -c 'import json; d = json.load(open("tr.json")); print("trace events", len(d["traceEvents"]), d.get("otherData", {}))' 2>&1 | cut -c1-400
grep -E "trace" tr.log | tail -3
cd $OLDPWD
echo "seconds: $SECONDS"
echo "== the GPU cases"
G=/tmp/gc; mkdir -p $G
GPU_CHECK_ONLY=cases GPU_CTEST_ARGS='-j4 -E gpu_attr_' timeout $(( ${LIMIT:-575} - 245 - SECONDS )) tools/gpu-check $G > /tmp/cases.out 2>&1
grep -E 'tests passed|tests failed|\(Failed\)|Timeout|\*\*\*' $G/gpu-cases.log | tail -30
cp $G/gpu-cases.log $OUT/ 2>/dev/null; cp -r $T $OUT/f1 2>/dev/null
echo "seconds: $SECONDS"
echo "== the attribution matrix"
G=/tmp/ga; mkdir -p $G
GPU_CHECK_ONLY=attribution GPU_CTEST_ARGS='-j6' timeout $(( ${LIMIT:-575} - SECONDS )) tools/gpu-check $G > /tmp/attr.out 2>&1
grep -E 'tests passed|tests failed|\(Failed\)|Timeout' $G/attribution.log | tail -15; cat $G/matrix.md
echo "wrong_exact=no: $(grep -c 'wrong_exact=no' $G/matrix.txt); wrong_exact=yes: $(grep -c 'wrong_exact=yes' $G/matrix.txt)"
grep -E '^(WRONG|FAILED|WARN)' $G/attribution.log | cut -c1-300 | head -40
cp $G/matrix.md $G/matrix.txt $OUT/ 2>/dev/null
tar czf $OUT/attribution.tar.gz -C $G . /tmp/attr.out 2>/dev/null
echo "seconds: $SECONDS"
