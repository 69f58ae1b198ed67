#!/usr/bin/env python3
"""remat's loss on a model llama.cpp's own quantizer wrote (Q8_0 and Q4_K_M), with the base kept
in its blocks on the device (QLoRA), against a float64 PyTorch forward of the same model on the
weights gguf-py dequantizes (gguf.quants.dequantize, the Python twin of ggml's dequantize_row_*,
from llama.cpp's own source).

The models are llama-tiny's shape (4 layers, 4 query heads sharing 2 key/value heads) at width
128 and MLP 352 (rows llama.cpp's Q4_K_M quantizes in its q5_0/q8_0 fallbacks) and at width 256
and MLP 512 (rows of 256 values: q4_K and q6_K blocks), with seeded weights scaled so that every
matrix moves the loss, written by tests/tools/random_gguf_model.cpp. remat's loss is its validation loss before the first step of a
LoRA run (B starts at zero, so the adapters add nothing): one row of 64 tokens.

--perturb unpermuted leaves llama's q/k rows in the file's RoPE order in the reference, a mistake
the comparison must catch.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

SEQ = 64
TOLERANCE = 2e-5  # relative: remat's float32 forward against float64


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    return r.stdout


def read_model(path, gguf_py):
    sys.path.insert(0, gguf_py)
    from gguf import GGUFReader
    from gguf.quants import dequantize

    r = GGUFReader(path)

    def key(name):
        return r.fields[name].contents()

    arch = key("general.architecture")
    hp = {"layers": key(f"{arch}.block_count"), "heads": key(f"{arch}.attention.head_count"),
          "kv_heads": key(f"{arch}.attention.head_count_kv"),
          "theta": key(f"{arch}.rope.freq_base"),
          "eps": key(f"{arch}.attention.layer_norm_rms_epsilon")}
    weights, types = {}, set()
    for t in r.tensors:
        ne = [int(n) for n in t.shape]
        w = dequantize(t.data, t.tensor_type).astype(np.float64).reshape(list(reversed(ne)))
        weights[t.name] = torch.from_numpy(w)
        if len(ne) == 2:
            types.add(t.tensor_type.name)
    return hp, weights, sorted(types)


def unpermute(w, heads):
    """llama.cpp's converter stores q and k rows permuted for its RoPE; back to Hugging Face's."""
    rows, cols = w.shape
    return w.reshape(heads, rows // heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def reference_loss(hp, W, tokens, targets, perturb):
    T = len(tokens)
    H, KV = hp["heads"], hp["kv_heads"]
    x = W["token_embd.weight"][tokens]
    D = x.shape[-1] // H
    inv_freq = 1.0 / (hp["theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)[None]  # [1, T, D]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(hp["layers"]):
        p = f"blk.{i}."
        wq, wk = W[p + "attn_q.weight"], W[p + "attn_k.weight"]
        if perturb != "unpermuted":
            wq, wk = unpermute(wq, H), unpermute(wk, KV)
        h = rmsnorm(x, W[p + "attn_norm.weight"], hp["eps"])

        def heads(y, n):
            return y.view(T, n, D).transpose(0, 1)

        q, k = heads(h @ wq.T, H), heads(h @ wk.T, KV)
        v = heads(h @ W[p + "attn_v.weight"].T, KV)
        q = q * emb.cos() + rotate_half(q) * emb.sin()
        k = k * emb.cos() + rotate_half(k) * emb.sin()
        k, v = k.repeat_interleave(H // KV, 0), v.repeat_interleave(H // KV, 0)
        s = (q @ k.transpose(-2, -1)) / D ** 0.5
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v
        x = x + a.transpose(0, 1).reshape(T, H * D) @ W[p + "attn_output.weight"].T
        h = rmsnorm(x, W[p + "ffn_norm.weight"], hp["eps"])
        g = torch.nn.functional.silu(h @ W[p + "ffn_gate.weight"].T)
        x = x + (g * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
    x = rmsnorm(x, W["output_norm.weight"], hp["eps"])
    head = W.get("output.weight", W["token_embd.weight"])
    return float(torch.nn.functional.cross_entropy(x @ head.T, torch.tensor(targets)))


def remat_loss(remat, model, workdir, data):
    log = os.path.join(workdir, "log.jsonl")
    run([remat, "train", "--init", model, "--lora", "4", "--batch", "1", "--seq", str(SEQ),
         "--steps", "1", "--data", data, "--data-format", "bytes", "--val-data", data,
         "--val-batches", "1", "--log-json", log, "--quiet"])
    with open(log) as f:
        summary = [json.loads(l) for l in f if l.strip()][-1]
    return summary["initial_val_loss"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True)
    ap.add_argument("--random-gguf", required=True, help="tests/tools' remat_random_gguf_model")
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--perturb", choices=["unpermuted"])
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    # 66 bytes of text: one window of 65 tokens at offset 0 (inputs 0..63, targets 1..64).
    text = b"A quantized base, kept in its blocks, trains as its decoded values."[:SEQ + 2]
    data = os.path.join(args.workdir, "data.txt")
    with open(data, "wb") as f:
        f.write(text)
    tokens, targets = list(text[:SEQ]), list(text[1:SEQ + 1])
    failed = 0
    for shape, qtype in [("llama-tiny", "Q8_0"), ("llama-tiny", "Q4_K_M"),
                         ("llama-tiny,dim=256,ffn=512", "Q4_K_M")]:
        model = os.path.join(args.workdir, f"{shape.replace(',', '_')}-{qtype}.gguf")
        run([args.random_gguf, shape, model, qtype, "0", "8"])
        hp, weights, types = read_model(model, args.gguf_py)
        want = reference_loss(hp, weights, tokens, targets, args.perturb)
        got = remat_loss(args.remat, model, args.workdir, data)
        err = abs(got - want) / abs(want)
        ok = err < TOLERANCE
        failed += not ok
        print(f"{shape} {qtype} ({', '.join(types)}): remat {got:.9f}, PyTorch float64 {want:.9f}, "
              f"relative error {err:.3g} (tolerance {TOLERANCE}){'' if ok else ': FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed run or an unreadable file: one clear message
        print(f"pytorch gguf comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
