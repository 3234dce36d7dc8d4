# Where does the MLP step's time go: host enqueue vs waiting for the GPU at the chunk's end.
import statistics, time, torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device="cuda"); y = torch.randint(0, 10, (64,), device="cuda")
def step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward(); opt.step(); return loss
for _ in range(50): step()
torch.cuda.synchronize()
enq, wait, tot, gpu = [], [], [], []
for c in range(12):
    e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter(); e0.record()
    for _ in range(20): step()
    e1.record(); t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    enq.append((t1 - t0) / 20 * 1e3); wait.append((t2 - t1) * 1e3); tot.append((t2 - t0) / 20 * 1e3)
    gpu.append(e0.elapsed_time(e1) / 20)
m = statistics.median
print(f"SPLIT step {m(tot):.4f} min {min(tot):.4f} enqueue {m(enq):.4f} min {min(enq):.4f} gpu_span {m(gpu):.4f} sync_wait_ms {m(wait):.4f}")
