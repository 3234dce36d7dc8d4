# Sourced by the GPU case scripts: exits 77 (ctest's skip code here) with a clear message where there is no
# NVIDIA GPU, or, with `python` as argument, no PyTorch with CUDA; makes the toolkit's runtime findable.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi -L failed); this case runs on a GPU machine"
  exit 77
fi
if [ "${1:-}" = python ] && ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIPPED: python3 has no PyTorch with CUDA"
  exit 77
fi
# nvcc-built programs need the CUDA runtime library of the toolkit.
if ! ldconfig -p 2>/dev/null | grep -q 'libcudart.so.13'; then
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# SPDX-License-Identifier: MIT
