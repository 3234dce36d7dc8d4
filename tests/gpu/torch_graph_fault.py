"""GPU case for faults inside CUDA graphs (issue 9): a PyTorch step captured with torch.cuda.CUDAGraph and
replayed ten times; before replay 8 the static index tensor is filled with an index past the embedding table,
so that replay faults in the captured lookup. tests/gpu/graph_case.sh checks that the report names replay 8,
the lookup's kernel as the node that failed, and the lines marked GRAPH_CAPTURE_BEGIN and GRAPH_LOOKUP."""
import sys

import torch

torch.manual_seed(0)
device = torch.device("cuda")
table = torch.nn.Embedding(1000, 64).to(device)
linear = torch.nn.Linear(64, 64).to(device)
index = torch.randint(0, 1000, (256,), device=device)


def step():
    hidden = table(index)  # GRAPH_LOOKUP
    return torch.relu(linear(hidden)).sum()


# Warm-up on a side stream, as torch.cuda.graphs asks, so that the capture records no first-use work.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(side)

graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):  # GRAPH_CAPTURE_BEGIN
    result = step()

FAULT_REPLAY = 8
print(f"FAULT replay={FAULT_REPLAY}", flush=True)
try:
    for replay in range(1, 11):
        if replay == FAULT_REPLAY:
            index.fill_(10**9)  # past the table: the captured lookup faults in this replay
        graph.replay()
    torch.cuda.synchronize()
except RuntimeError as error:
    print(f"error: {str(error).splitlines()[0]}", flush=True)
    sys.exit(1)
print("no error", flush=True)
# SPDX-License-Identifier: MIT
