#!/usr/bin/python3
"""remat side by side with PyTorch CPU on the same GPT config and batch (run on demand, not in CI).

usage: /usr/bin/python3 samples/compare_pytorch.py --remat build/bin/remat
           [--configs tiny,gpt2] [--steps 3] [--warmup 1] [--threads 1,2] [--out DIR] [--matmuls]

For each config (tiny: B=8 T=64; gpt2 = GPT-2 124M: B=4 T=64) it measures one AdamW training
step of the same GPT-2 architecture (learned positions, pre-LayerNorm, GELU MLP, tied head):
  - PyTorch CPU float32 at each --threads count, with and without torch.utils.checkpoint around
    every block (median step time, tokens/s, peak RSS growth and saved-activation bytes), and
  - remat on the default Vulkan device, policies none and every:1 (per-block checkpointing, the
    same thing torch.utils.checkpoint does), via `remat bench --policy P` and its frontier.json,
and prints the ratios remat / PyTorch of step time, tok/s and activation memory.
Activation memory: PyTorch's is the bytes of tensors saved for backward during one forward
(torch.autograd.graph.saved_tensors_hooks, storage-deduplicated); remat's is the planned arena.

--matmuls adds, per config, where the step's time goes: the GFLOP/s of PyTorch's GEMMs at the
step's matmul shapes (forward, dX and dW of every linear layer and the tied head) against remat's
matmul kernels (`remat bench --kernels`, one block and the head), both as a share of the FMA peak
remat measures on its device, and the share of remat's step the matmuls and each other kernel
family take.
"""
import argparse
import csv
import multiprocessing
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as ckpt

CONFIGS = {
    # name: (layers, dim, heads, vocab, ctx, batch, seq); tiny matches ModelConfig::preset("tiny")
    "tiny": (4, 128, 4, 256, 64, 8, 64),
    "gpt2": (12, 768, 12, 50257, 1024, 4, 64),
}


class Block(nn.Module):
    def __init__(self, c, nh):
        super().__init__()
        self.nh = nh
        self.ln_1 = nn.LayerNorm(c)
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c)
        self.mlp_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.nh, c // self.nh).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (c // self.nh) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, c, nh, vocab, ctx, checkpoint):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(ctx, c)
        self.h = nn.ModuleList(Block(c, nh) for _ in range(layers))
        self.ln_f = nn.LayerNorm(c)
        self.checkpoint = checkpoint

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for blk in self.h:
            x = ckpt.checkpoint(blk, x, use_reentrant=False) if self.checkpoint else blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def saved_bytes(model, idx, tgt):
    """Bytes of distinct storages autograd saves for backward during one forward."""
    seen = {}

    def pack(t):
        try:
            key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        except AttributeError:  # older torch
            key = (t.storage().data_ptr(), t.storage().nbytes())
        params = {p.data_ptr() for p in model.parameters()}
        if key[0] not in params:
            seen[key] = key[1]
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(idx, tgt)
    del loss
    return sum(seen.values())


def torch_step_ms(cfg, threads, checkpoint, steps, warmup):
    layers, c, nh, vocab, ctx, b, t = cfg
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(layers, c, nh, vocab, ctx, checkpoint)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, vocab, (b, t), generator=g)
    tgt = torch.randint(0, vocab, (b, t), generator=g)
    act = saved_bytes(model, idx, tgt)
    rss0 = rss_bytes()
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        opt.step()
        dt = (time.perf_counter() - t0) * 1000
        if i >= warmup:
            times.append(dt)
    return {"ms": statistics.median(times), "tok_s": b * t / (statistics.median(times) / 1000),
            "activation_bytes": act, "rss_growth_bytes": max(rss_bytes() - rss0, 0),
            "loss": float(loss)}


def in_child(f, *args):
    """f(*args) in a fresh process that exits afterwards: PyTorch's worker threads keep spinning
    for a while after a multi-threaded run, and in this process they would take CPU from the
    remat runs that follow (measured: a tiny remat step 103 ms after a clean start, 147 ms while
    they spun)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(f, args)


def remat_point(remat, name, cfg, policy, steps, warmup, out):
    layers, c, nh, vocab, ctx, b, t = cfg
    d = os.path.join(out, "%s-%s" % (name, policy.replace(":", "")))
    cmd = [remat, "bench", "--layers", str(layers), "--dim", str(c), "--heads", str(nh),
           "--vocab", str(vocab), "--ctx", str(ctx), "--batch", str(b), "--seq", str(t),
           "--policy", policy, "--steps", str(steps), "--warmup", str(warmup), "--out", d]
    print("  $ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(d, "frontier.json")) as f:
        doc = json.load(f)
    p = next(p for p in doc["points"] if p["label"] == policy)
    if "error" in p:  # e.g. GPT-2 without checkpointing does not fit a 2 GiB device
        return {"error": p["error"], "device": doc["device"]}
    return {"ms": p["median_step_ms"], "tok_s": p["tokens_per_s"],
            "activation_bytes": p["arena_bytes"], "device_bytes": p["device_bytes_allocated"],
            "device": doc["device"]}


def torch_matmul_rate(cfg, threads, repeats=5):
    """GFLOP/s of torch.mm over one step's matmuls: forward, dX and dW of each linear and the head."""
    layers, c, nh, vocab, ctx, b, t = cfg
    torch.set_num_threads(threads)
    m = b * t
    flops, secs = 0.0, 0.0
    for k, n in ((c, 3 * c), (c, c), (c, 4 * c), (4 * c, c), (c, vocab)):
        x, w, dy = torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)
        for f in (lambda: x @ w, lambda: dy @ w.t(), lambda: x.t() @ dy):
            f()  # warm-up
            best = min(timed(f) for _ in range(repeats))
            flops += 2.0 * m * k * n
            secs += best
    return flops / secs / 1e9


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def remat_kernel_families(remat, cfg, out):
    """`remat bench --kernels` on one block and the head: per-family ms, GFLOP and the peaks."""
    layers, c, nh, vocab, ctx, b, t = cfg
    cmd = [remat, "bench", "--layers", "1", "--dim", str(c), "--heads", str(nh), "--vocab",
           str(vocab), "--ctx", str(ctx), "--batch", str(b), "--seq", str(t), "--kernels",
           "--warmup", "1", "--steps", "3", "--out", out]
    print("  $ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    fam, peak = {}, 0.0
    with open(os.path.join(out, "kernels.csv")) as f:
        for row in csv.DictReader(f):
            kind = "matmul" if row["kind"].startswith("matmul") else row["kind"]
            ms, gf = fam.get(kind, (0.0, 0.0))
            fam[kind] = (ms + float(row["ms"]), gf + float(row["flops"]) / 1e9)
            peak = float(row["peak_gflop_per_s"])
    return fam, peak


def print_matmuls(remat, name, cfg, threads, out):
    fam, peak = remat_kernel_families(remat, cfg, os.path.join(out, name + "-kernels"))
    total = sum(ms for ms, _ in fam.values())
    ms, gf = fam["matmul"]
    print("  matmuls (FMA peak measured by remat: %.1f GFLOP/s)" % peak)
    print("    remat kernels            %7.1f GFLOP/s  %5.1f%% of peak" % (gf / ms * 1e3,
                                                                         100 * gf / ms * 1e3 / peak))
    for th in threads:
        r = in_child(torch_matmul_rate, cfg, th)
        print("    torch.mm %d thread%-3s     %7.1f GFLOP/s  %5.1f%% of peak" % (
            th, "" if th == 1 else "s", r, 100 * r / peak))
    print("  share of remat's step (one block and the head, no checkpointing)")
    for kind, (kms, _) in sorted(fam.items(), key=lambda kv: -kv[1][0]):
        print("    %-24s %5.1f%%" % (kind, 100 * kms / total))
    return {"peak_gflop_per_s": peak, "families_ms": {k: v[0] for k, v in fam.items()}}


def mib(x):
    return "%.1f MiB" % (x / 2**20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--remat", required=True, help="path to the remat binary")
    ap.add_argument("--configs", default="tiny,gpt2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", default=None, help="folder for remat's bench output (default: a temp dir)")
    ap.add_argument("--torch-only", default="", help="configs to run in PyTorch only (e.g. gpt2 "
                    "where a remat step on a slow device takes minutes)")
    ap.add_argument("--json", default=None, help="also write all figures to this JSON file")
    ap.add_argument("--matmuls", action="store_true", help="also compare matmul rates against the "
                    "device's FMA peak and show each kernel family's share of remat's step")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="remat_compare_")
    results = {}
    for name in a.configs.split(","):
        cfg = CONFIGS[name]
        layers, c, nh, vocab, ctx, b, t = cfg
        print("%s: L%d C%d H%d V%d, B=%d T=%d" % (name, layers, c, nh, vocab, b, t), flush=True)
        r = {"torch": {}, "remat": {}}
        for th in [int(x) for x in a.threads.split(",")]:
            for ck in (False, True):
                key = "%d thread%s%s" % (th, "" if th == 1 else "s", ", checkpoint" if ck else "")
                r["torch"][key] = in_child(torch_step_ms, cfg, th, ck, a.steps, a.warmup)
                print("  torch %-24s %10.1f ms %9.0f tok/s  saved %s" % (
                    key, r["torch"][key]["ms"], r["torch"][key]["tok_s"],
                    mib(r["torch"][key]["activation_bytes"])), flush=True)
        if name in a.torch_only.split(","):
            results[name] = r
            print(flush=True)
            continue
        for pol in ("none", "every:1"):
            r["remat"][pol] = remat_point(a.remat, name, cfg, pol, a.steps, a.warmup, out)
            if "error" in r["remat"][pol]:
                print("  remat %-24s did not run: %s" % (pol, r["remat"][pol]["error"]), flush=True)
                continue
            print("  remat %-24s %10.1f ms %9.0f tok/s  arena %s" % (
                pol, r["remat"][pol]["ms"], r["remat"][pol]["tok_s"],
                mib(r["remat"][pol]["activation_bytes"])), flush=True)
        results[name] = r
        if a.matmuls:
            r["matmuls"] = print_matmuls(a.remat, name, cfg, [int(x) for x in a.threads.split(",")],
                                         out)
        print("\n  ratios remat / torch (>1: remat slower or larger)")
        print("  %-10s %-26s %10s %10s %12s" % ("remat", "torch", "step time", "tok/s", "activations"))
        for pol, tkey in (("none", None), ("every:1", "checkpoint")):
            for key, tr in r["torch"].items():
                if (tkey is None) == ("checkpoint" in key):
                    continue
                rr = r["remat"][pol]
                if "error" in rr:
                    continue
                print("  %-10s %-26s %9.2fx %9.2fx %11.2fx" % (
                    pol, key, rr["ms"] / tr["ms"], rr["tok_s"] / tr["tok_s"],
                    rr["activation_bytes"] / max(tr["activation_bytes"], 1)))
        print(flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
