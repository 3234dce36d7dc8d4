# GPU case: a training loop fed by a DataLoader with forked worker processes (the default on Linux), CUDA
# initialized in the parent before the workers are forked, and a normal exit. Under the shim the output and
# exit status must be those without it: forked children start clean (docs/reliability.md).
import torch
from torch.utils.data import DataLoader, Dataset


class Numbers(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        return torch.randn(32, generator=generator), index % 4


torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Numbers(), batch_size=32, shuffle=False, num_workers=2, multiprocessing_context="fork")
for epoch in range(2):
    total = 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch + 1} loss {total:.6f}")
# SPDX-License-Identifier: MIT
