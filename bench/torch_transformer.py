# Benchmark workload (issue 21): a PyTorch training loop written the way PyTorch's own tutorial writes it, not
# one written for this tool. It follows "Language Modeling with nn.Transformer and torchtext" (pytorch/tutorials,
# beginner_source/transformer_tutorial.py, the version whose forward() builds the causal mask each call): token
# embedding scaled by sqrt(d_model), sinusoidal positional encoding with dropout, an nn.TransformerEncoder of
# nn.TransformerEncoderLayer (sequence-first), a linear decoder to the vocabulary; nn.CrossEntropyLoss, SGD at lr 5.0
# with StepLR (gamma 0.95) stepped once an epoch, clip_grad_norm_(0.5) before each step, and the loss read with
# loss.item() every step (so one synchronize a step, as there). The tutorial's sizes too: 2 layers, d_model 200,
# 2 heads, feed-forward 200, dropout 0.2, 35 tokens (bptt) x batch 20 a step, 28,782 tokens of vocabulary (its
# WikiText-2 vocabulary). What differs: the tokens are synthetic, drawn from a fixed seed (no download, no
# torchtext; the same in every run), and its progress printing and per-epoch evaluation are left out (they are not
# training steps). Nothing in it is tuned for cuda-blockrun: no CUDA graphs, no torch.compile, no fused options.
# A warm-up epoch of 50 steps, then 10 epochs of 100 steps, each timed on the host until the GPU finished it
# (synchronized): the figure is the median epoch's time per step, so a stall of the machine in one epoch does
# not move it. The mean loss of the last epoch is printed at the end.
#   python3 torch_transformer.py [--scale S] [--chunks N]   (S multiplies the timed steps: a shortened run for
#   slow tools; N: epochs, 10)
# Prints "BENCH transformer_step <milliseconds per step> ms" for bench/harness.py, and "BENCH
# transformer_step_min" of the fastest epoch (issue 21's comparisons); where PyTorch or a CUDA device
# is missing, "SKIPPED: <why>" and exit 0 (the harness itself skips the workload there, before running it).
# Under the benchmark shim (bench/bench_switch.py) it runs as many epochs again with the shim switched off, in
# alternation, and prints "BENCH transformer_step_switched_ratio" too.
import argparse
import math
import statistics
import sys
import time

try:
    import torch
    from torch import nn
except ImportError as error:
    print(f"SKIPPED: {error}", flush=True)
    sys.exit(0)

from bench_switch import print_switched, time_chunks

VOCABULARY = 28782
EMBEDDING = 200
FEED_FORWARD = 200
LAYERS = 2
HEADS = 2
DROPOUT = 0.2
BPTT = 35
BATCH = 20
WARMUP_STEPS = 50
STEPS_PER_EPOCH = 100


class PositionalEncoding(nn.Module):
    """Adds the fixed sine/cosine position signal to [sequence, batch, embedding] inputs, then dropout."""

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        table = torch.zeros(max_len, 1, d_model)
        table[:, 0, 0::2] = torch.sin(position * frequency)
        table[:, 0, 1::2] = torch.cos(position * frequency)
        self.register_buffer("pe", table)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0)])


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        src = self.pos_encoder(self.embedding(src) * math.sqrt(self.d_model))
        if src_mask is None:  # causal: each position sees only those before it
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        return self.linear(self.transformer_encoder(src, src_mask))


def batchify(tokens, batch_size, device):
    """A flat token stream as [length // batch_size, batch_size]: batch_size independent columns."""
    rows = tokens.size(0) // batch_size
    return tokens[: rows * batch_size].view(batch_size, rows).t().contiguous().to(device)


def get_batch(source, i):
    """The BPTT rows from i as input, the same rows shifted by one token as the flattened target."""
    length = min(BPTT, len(source) - 1 - i)
    return source[i : i + length], source[i + 1 : i + 1 + length].reshape(-1)


def synthetic_corpus(generator, steps, device):
    """Enough tokens for exactly `steps` batches of BPTT rows (one row more for the last target)."""
    tokens = torch.randint(0, VOCABULARY, ((steps * BPTT + 1) * BATCH,), generator=generator)
    return batchify(tokens, BATCH, device)


def train(model, criterion, optimizer, train_data):
    """One epoch over train_data, the tutorial's loop; returns its mean loss and its number of steps."""
    model.train()
    total_loss = 0.0
    steps = 0
    for i in range(0, train_data.size(0) - 1, BPTT):
        data, targets = get_batch(train_data, i)
        output = model(data)
        loss = criterion(output.view(-1, VOCABULARY), targets)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        total_loss += loss.item()
        steps += 1
    return total_loss / steps, steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--chunks", type=int, default=10, help="timed chunks (the median and fastest are printed)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: PyTorch sees no CUDA device", flush=True)
        return 0
    device = torch.device("cuda")
    steps = max(1, int(STEPS_PER_EPOCH * args.scale))
    torch.manual_seed(0)  # the weights and the dropout masks
    generator = torch.Generator().manual_seed(0)  # the tokens
    warmup_data = synthetic_corpus(generator, WARMUP_STEPS, device)
    train_data = synthetic_corpus(generator, steps, device)
    model = TransformerModel(VOCABULARY, EMBEDDING, HEADS, FEED_FORWARD, LAYERS, DROPOUT).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.95)

    train(model, criterion, optimizer, warmup_data)
    scheduler.step()
    torch.cuda.synchronize()
    loss = None

    def timed_epoch():
        nonlocal loss
        start = time.perf_counter()
        loss, done = train(model, criterion, optimizer, train_data)
        torch.cuda.synchronize()
        elapsed = (time.perf_counter() - start) / done
        scheduler.step()
        return elapsed

    per_step, off = time_chunks(args.chunks, timed_epoch)  # off: under the benchmark shim only
    print(f"BENCH transformer_step {statistics.median(per_step) * 1e3:.5f} ms", flush=True)
    print(f"BENCH transformer_step_min {min(per_step) * 1e3:.5f} ms", flush=True)
    print_switched("transformer_step", "ms", 1e3, per_step, off)
    print(f"final loss {loss:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
