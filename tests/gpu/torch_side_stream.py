# GPU case (issue 38, tests/gpu/attribution_case.sh): a lookup on a side stream with an index past its table,
# while the main stream runs a GEMM; the main stream then waits for the side stream and uses the rows.
#
# The pattern of real programs: work moved to a `torch.cuda.Stream()` to overlap it with the main stream's
# (prefetching, an embedding lookup beside the dense part), joined by `wait_stream`. The lookup
# (torch.index_select of 6 rows of a 2-D table: PyTorch 2.11 launches indexSelectSmallIndex, seen on the H200,
# whose bounds check is a CUDA_KERNEL_ASSERT: cudaErrorAssert, 710) runs under `with torch.cuda.stream(side):`; the
# error surfaces on the main stream, at the launch check of the op that uses the rows or at `.item()`, never at
# the lookup's line. What makes it hard: two streams have work in flight when it faults (the GEMM on the main
# stream, launched before the lookup: about 2 ms for 4096^3 in float32 on an H200, an estimate), so the host's
# view names both as suspects, and only breadcrumbs (or a blocked run) can tell whether the GEMM completed (on
# the H200, 2026-12-04: it had, and breadcrumbs named the lookup exactly; the case allows either,
# ATTRIBUTION_CONCURRENT). The lookup's line carries the marker comment the case greps for (never a hard-coded
# line number).
#   python3 torch_side_stream.py
import sys
import traceback

import torch

if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no CUDA device")
    sys.exit(77)


def describe(error):
    """Where in this file the error surfaced, and the first line of its message."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
    where = f"line {frames[-1].lineno} ({frames[-1].line.strip()})" if frames else "an unknown line"
    lines = str(error).splitlines()
    return f"{type(error).__name__} surfaced at {where}: {lines[0] if lines else ''}"


torch.manual_seed(0)
table = torch.randn(1000, 64, device="cuda")
ids = torch.tensor([3, 14, 15, 92, 10**9, 65], device="cuda")  # the bug: 10**9 is past the table's 1000 rows
x = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()  # the setup is done: an error from here on is the fault below
main = torch.cuda.current_stream()
side = torch.cuda.Stream()
print("torch_side_stream: GEMM on the main stream, index_select (id 10**9 of 1000) on a side stream", flush=True)
try:
    side.wait_stream(main)  # the side stream's inputs were made on the main stream
    product = x @ x  # main stream: runs while the side stream looks the rows up
    with torch.cuda.stream(side):
        rows = torch.index_select(table, 0, ids)  # FAULT_LINE
    # No rows.record_stream(main): rows lives to the end. (With it, freeing rows at exit, after the error, has
    # the caching allocator query the recorded event, and its exception ends the process in a destructor.)
    main.wait_stream(side)
    total = rows.sum() + product.sum()
    print(f"torch_side_stream: UNEXPECTED: no error (total {total.item()})", flush=True)
except RuntimeError as error:
    print(f"torch_side_stream: {describe(error)}", flush=True)
    sys.exit(1)
sys.exit(0)
# SPDX-License-Identifier: MIT
