# GPU case: a small training loop (MLP, LayerNorm, AdamW) with fixed seeds. Its printed losses must
# be identical with and without the shim, and under --block all (blocking changes timing, not results).
import torch

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
inputs = torch.randn(64, 256, device="cuda")
targets = torch.randint(0, 10, (64,), device="cuda")
for step in range(30):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    if step % 10 == 9:
        print(f"step {step + 1} loss {loss.item():.6f}")
# SPDX-License-Identifier: MIT
