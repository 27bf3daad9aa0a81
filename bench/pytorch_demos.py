#!/usr/bin/env python3
"""The `openrnn mnist` and `openrnn char train` demos, rebuilt in PyTorch for a side-by-side comparison.

Same models, same data handling, same optimiser settings and defaults as the CLI (apps/mnist_cmd.cpp,
apps/char_cmd.cpp); the LSTM is torch.nn.LSTM, run with cuDNN (default) or with PyTorch's native kernels
(--no-cudnn, i.e. torch.backends.cudnn.enabled = False). Prints one line per epoch / report in the CLI's format
(`loss=`, `acc=`, `val_acc=`, `val_loss=`, `seconds=`, `chars_per_sec=`) and a summary line last.

No network access is needed: pass the data folder (the layout of /work/shared/data, or what
`openrnn data download` creates):
  python3 bench/pytorch_demos.py mnist --data DIR [--epochs 10] [--no-cudnn]
  python3 bench/pytorch_demos.py char --text DIR/tinyshakespeare/input.txt [--steps 2000] [--no-cudnn]
  python3 bench/pytorch_demos.py all --data DIR       # both demos, each with and without cuDNN
"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------------------------------------------
# Data (same checks as src/io/idx.cpp)
# ---------------------------------------------------------------------------------------------------------------
def read_idx(path, want_magic):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic = struct.unpack(">I", raw[:4])[0]
    if magic != want_magic:
        sys.exit(f"{path}: magic {magic}, expected {want_magic}")
    nd = raw[3]
    dims = struct.unpack(">" + "I" * nd, raw[4:4 + 4 * nd])
    data = raw[4 + 4 * nd:]
    if len(data) != math.prod(dims):
        sys.exit(f"{path}: size does not match dimensions {dims}")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(dims)


def load_mnist(root, fashion):
    d = os.path.join(root, "fashion-mnist" if fashion else "mnist")
    files = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz"]
    missing = [os.path.join(d, f) for f in files if not os.path.exists(os.path.join(d, f))]
    if missing:
        sys.exit("missing data files:\n  " + "\n  ".join(missing))
    xs = read_idx(os.path.join(d, files[0]), 2051)
    ys = read_idx(os.path.join(d, files[1]), 2049)
    xt = read_idx(os.path.join(d, files[2]), 2051)
    yt = read_idx(os.path.join(d, files[3]), 2049)
    return xs, ys, xt, yt


# ---------------------------------------------------------------------------------------------------------------
# MNIST: rows as time steps, LSTM(28, H) -> Linear(H, 10) on the last hidden state
# ---------------------------------------------------------------------------------------------------------------
class RowLSTM(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.rnn = nn.LSTM(28, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 10)

    def forward(self, x):  # x [B, 28, 28]
        _, (h, _) = self.rnn(x)
        return self.head(h[-1])


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_mnist(args, device, label):
    torch.manual_seed(args.seed)
    xs, ys, xt, yt = load_mnist(args.data, args.fashion)
    if args.limit:
        xs, ys = xs[:args.limit], ys[:args.limit]
    # Whole data set on the device as float in [0, 1] (47 MB for MNIST), so timing measures the model, not loading.
    xs = (xs.float() / 255.0).to(device)
    ys = ys.long().to(device)
    xt = (xt.float() / 255.0).to(device)
    yt = yt.long().to(device)
    model = RowLSTM(args.hidden).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=args.lr_decay)
    n = xs.shape[0]
    best = 0.0
    epoch_seconds = []
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(n, device=device)
        sync(device)
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        for s in range(0, n, args.batch):
            idx = perm[s:s + args.batch]
            logits = model(xs[idx])
            loss = F.cross_entropy(logits, ys[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * idx.numel()
            correct += (logits.argmax(1) == ys[idx]).sum()
        sync(device)
        seconds = time.perf_counter() - t0
        epoch_seconds.append(seconds)
        lr = opt.param_groups[0]["lr"]
        sched.step()
        model.eval()
        with torch.no_grad():
            pred = torch.cat([model(xt[s:s + 1000]).argmax(1) for s in range(0, xt.shape[0], 1000)])
            val_acc = (pred == yt).float().mean().item()
        best = max(best, val_acc)
        print(f"[{label}] epoch={epoch + 1} loss={loss_sum.item() / n:.6f} acc={correct.item() / n:.4f} "
              f"val_acc={val_acc:.4f} lr={lr:.6g} seconds={seconds:.2f} samples_per_sec={n / seconds:.0f}",
              flush=True)
    # The first epoch includes cuDNN/cuBLAS warm-up; report the median of the others when there are any.
    steady = sorted(epoch_seconds[1:] or epoch_seconds)[len(epoch_seconds[1:] or epoch_seconds) // 2]
    return {"demo": "mnist", "backend": label, "final_val_acc": val_acc, "best_val_acc": best,
            "seconds_per_epoch": steady, "samples_per_sec": n / steady}


# ---------------------------------------------------------------------------------------------------------------
# Char LM: Embedding -> LSTM(L layers, dropout between) -> dropout -> Linear, truncated BPTT over B streams
# ---------------------------------------------------------------------------------------------------------------
class CharLSTM(nn.Module):
    def __init__(self, vocab, embed, hidden, layers, dropout):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.LSTM(embed, hidden, layers, dropout=dropout if layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids, state):  # ids [T, B]
        y, state = self.rnn(self.embed(ids), state)
        return self.head(self.drop(y)), state


def run_char(args, device, label):
    torch.manual_seed(args.seed)
    with open(args.text, "rb") as f:
        text = f.read()
    vocab = sorted(set(text))
    lut = torch.full((256,), -1, dtype=torch.long)
    for i, b in enumerate(vocab):
        lut[b] = i
    ids = lut[torch.frombuffer(bytearray(text), dtype=torch.uint8).long()]
    n_val = int(len(ids) * args.val_frac)
    n_train = len(ids) - n_val
    T, B, V = args.seq_len, args.batch, len(vocab)
    S = n_train // B
    Sv = n_val // B
    train = ids[:S * B].view(B, S).t().contiguous().to(device)            # [S, B]: column b is stream b
    val = ids[n_train:n_train + Sv * B].view(B, Sv).t().contiguous().to(device)
    model = CharLSTM(V, args.embed, args.hidden_char, args.layers, args.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr_char)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=args.decay_every, gamma=args.lr_decay_char)

    def zero_state():
        z = torch.zeros(args.layers, B, args.hidden_char, device=device)
        return (z, z.clone())

    def validate():
        model.eval()
        state = zero_state()
        total, count = 0.0, 0
        with torch.no_grad():
            for p in range(0, Sv - 1, T):
                t = min(T, Sv - 1 - p)
                logits, state = model(val[p:p + t], state)
                total += F.cross_entropy(logits.reshape(-1, V), val[p + 1:p + 1 + t].reshape(-1),
                                         reduction="sum").item()
                count += t * B
        model.train()
        return total / max(count, 1)

    state = zero_state()
    cursor = 0
    loss_acc = torch.zeros((), device=device)
    k = 0
    sync(device)
    t_report = time.perf_counter()
    rates = []
    val_loss = float("nan")
    for step in range(1, args.steps + 1):
        if cursor + T + 1 > S:
            cursor = 0
            state = zero_state()
        x = train[cursor:cursor + T]
        y = train[cursor + 1:cursor + 1 + T]
        logits, state = model(x, state)
        state = (state[0].detach(), state[1].detach())  # truncated BPTT
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        sched.step()
        cursor += T
        loss_acc += loss.detach()
        k += 1
        if step % args.every == 0 or step == args.steps:
            sync(device)
            seconds = time.perf_counter() - t_report
            cps = k * T * B / seconds
            if step > args.every:  # skip the first window (warm-up)
                rates.append(cps)
            val_loss = validate()
            print(f"[{label}] step={step} loss={loss_acc.item() / k:.6f} val_loss={val_loss:.6f} "
                  f"lr={opt.param_groups[0]['lr']:.6g} chars_per_sec={cps:.0f} seconds={seconds:.2f}", flush=True)
            loss_acc.zero_()
            k = 0
            sync(device)
            t_report = time.perf_counter()
    rates = rates or [cps]
    return {"demo": "char", "backend": label, "final_val_loss": val_loss,
            "chars_per_sec": sorted(rates)[len(rates) // 2]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("demo", choices=["mnist", "char", "all"])
    ap.add_argument("--data", default=os.environ.get("OPENRNN_DATA", ""), help="data folder (mnist/, tinyshakespeare/)")
    ap.add_argument("--text", help="text file for the char demo (default DATA/tinyshakespeare/input.txt)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--no-cudnn", action="store_true", help="torch.backends.cudnn.enabled = False")
    ap.add_argument("--seed", type=int, default=1)
    # mnist (defaults of `openrnn mnist`)
    ap.add_argument("--fashion", action="store_true")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--lr-decay", type=float, default=0.75)
    ap.add_argument("--limit", type=int, default=0)
    # char (defaults of `openrnn char train`)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--every", type=int, default=200)
    ap.add_argument("--seq-len", type=int, default=100)
    ap.add_argument("--char-batch", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden-char", type=int, default=512)
    ap.add_argument("--embed", type=int, default=64)
    ap.add_argument("--dropout", type=float, default=0.3)
    ap.add_argument("--lr-char", type=float, default=2e-3)
    ap.add_argument("--lr-decay-char", type=float, default=0.5)
    ap.add_argument("--decay-every", type=int, default=1500)
    ap.add_argument("--clip", type=float, default=5.0)
    ap.add_argument("--val-frac", type=float, default=0.1)
    args = ap.parse_args()
    if not args.data and (args.demo != "char" or not args.text):
        sys.exit("--data DIR (or $OPENRNN_DATA) is required")
    if args.text is None:
        args.text = os.path.join(args.data, "tinyshakespeare", "input.txt")
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(device)}), cuDNN {torch.backends.cudnn.version()}"
             if device.type == "cuda" else ""), flush=True)
    variants = [False, True] if args.demo == "all" else [args.no_cudnn]
    demos = ["mnist", "char"] if args.demo == "all" else [args.demo]
    results = []
    for demo in demos:
        for no_cudnn in variants:
            torch.backends.cudnn.enabled = not no_cudnn
            label = f"{demo}/{'native' if no_cudnn else 'cudnn'}"
            if demo == "mnist":
                results.append(run_mnist(args, device, label))
            else:
                b = args.batch
                args.batch = args.char_batch
                results.append(run_char(args, device, label))
                args.batch = b
    print("summary:")
    for r in results:
        print("  " + " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
