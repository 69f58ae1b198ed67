#!/usr/bin/python3
"""remat's LoRA against PyTorch, end to end.

The odd-sized GPT-2 of pytorch_reference.py (L=3, C=48, 3 heads, ctx 29, vocab 256) gets rank-3
LoRA adapters on the modules PEFT's target_modules ["c_attn", "c_proj"] name (attn.c_attn,
attn.c_proj and mlp.c_proj; mlp.c_fc stays frozen). This script writes the base weights and an
adapter in PEFT's files (adapter_config.json, adapter_model.safetensors, B not zero so every
adapter has a gradient from the first step), trains 3 AdamW steps with
`remat train --init BASE --lora-init DIR --save-adapter OUT --merge-out MERGED` (under the policy
every:1, under an arena cap, and under every:1 with the LM head and loss in chunks of 64 rows,
`--loss-chunk 64`: B*T = 69 rows, so a ragged chunk of 5 follows, and the tied head, frozen, gets
no gradient), repeats them in float64 PyTorch on the adapters alone, and compares losses,
gradient norms, the saved adapters and the merged weights. The three runs save the same adapter
bits: chunking changes no bit of the head's dx.

With --weights-dtype f16 or bf16 remat stores the frozen base's 2-D weights (wte, wpe and the
linear weights; LayerNorm gains and biases stay float32) in 16 bits, rounded to nearest even, and
computes in float32 on the widened values; the reference rounds the same weights the same way
(torch's float32 -> float16/bfloat16 conversion rounds to nearest even too) and then runs in
float64 on them, so the tolerances stay those of the float32 comparison. --perturb unrounded
keeps the reference's base unrounded: the losses must then differ beyond the tolerance (a base
that remat did not really round would pass the unperturbed run with an unrounded reference only).

Usage: pytorch_lora_reference.py --remat PATH/TO/remat --workdir DIR [--weights-dtype f32|f16|bf16]
       [--perturb unrounded]
Exit status 0 when every comparison passes, 1 on any mismatch or failure.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys

import torch

import pytorch_reference as ref

RANK, ALPHA, TARGETS = 3, 5.0, ["c_attn", "c_proj"]
SCALE = ALPHA / RANK
STEPS = 3
ref.STEPS = STEPS  # ref.compare() checks this many steps
LR, WD, BETAS, EPS = ref.LR, ref.WD, ref.BETAS, ref.EPS
SEED = 20240607
# Merged weights: W + scale·(B·A)ᵀ from remat's own adapter, in float64, against remat's float32
# file. Only the final rounding differs: half an ulp of |W| ≲ 1 is 6e-8; 1e-6 leaves room and
# still sees any wrong orientation or scale (the adapters move W by ~1e-2).
MERGE_ATOL = 1e-6


def adapted_modules():
    """Module paths PEFT would adapt: the end of the path is a target (whole components)."""
    out = []
    for i in range(ref.LAYERS):
        for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            path = f"h.{i}.{m}"
            if any(path == t or path.endswith("." + t) for t in TARGETS):
                out.append(path)
    return out


def peft_key(module, which):
    return f"base_model.model.transformer.{module}.lora_{which}.weight"


def initial_adapter(base):
    """A as PEFT initialises it (U(-1/sqrt(in), 1/sqrt(in))), B small and random rather than zero,
    so that A has a gradient in the first step. Rounded to float32 like the base."""
    gen = torch.Generator().manual_seed(SEED)
    adapter = {}
    for m in adapted_modules():
        fan_in, fan_out = base[m + ".weight"].shape  # Conv1D: [in, out]
        bound = 1 / math.sqrt(fan_in)
        a = (torch.rand(RANK, fan_in, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        b = torch.randn(fan_out, RANK, generator=gen, dtype=torch.float64) * 0.05
        adapter[peft_key(m, "A")] = a.to(torch.float32)
        adapter[peft_key(m, "B")] = b.to(torch.float32)
    return adapter


def write_adapter(directory, adapter):
    os.makedirs(directory, exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": None,
              "r": RANK, "lora_alpha": ALPHA, "target_modules": TARGETS, "lora_dropout": 0.0,
              "bias": "none", "fan_in_fan_out": True, "use_rslora": False, "use_dora": False,
              "init_lora_weights": True, "modules_to_save": None}
    with open(os.path.join(directory, "adapter_config.json"), "w") as f:
        json.dump(config, f)
    ref.write_safetensors(os.path.join(directory, "adapter_model.safetensors"),
                          sorted(adapter.items()), {"format": "pt"})


def stored_base(base, dtype):
    """The base as remat stores it under --weights-dtype: 2-D tensors rounded, 1-D ones kept."""
    if dtype == "f32":
        return dict(base)
    to = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    return {n: (w.to(to).to(torch.float32) if w.dim() >= 2 else w) for n, w in base.items()}


def lora_loss(P, L, tokens, targets):
    """GPT-2 with y = x·W + b + scale·(x·Aᵀ)·Bᵀ on the adapted modules (PEFT's LoRA layer)."""
    def linear(x, m):
        y = x @ P[m + ".weight"] + P[m + ".bias"]
        if peft_key(m, "A") in L:
            y = y + (x @ L[peft_key(m, "A")].T) @ L[peft_key(m, "B")].T * SCALE
        return y

    B, T = tokens.shape
    x = P["wte.weight"][tokens] + P["wpe.weight"][:T]
    for i in range(ref.LAYERS):
        p = f"h.{i}."
        h = ref.layernorm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"])
        x = x + linear(ref.attention(linear(h, p + "attn.c_attn")), p + "attn.c_proj")
        h = ref.layernorm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"])
        x = x + linear(ref.gelu_tanh(linear(h, p + "mlp.c_fc")), p + "mlp.c_proj")
    x = ref.layernorm(x, P["ln_f.weight"], P["ln_f.bias"])
    logits = x @ P["wte.weight"].T
    V = ref.VOCAB
    return torch.nn.functional.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))


def reference_run(base, adapter, data):
    """AdamW on the adapters alone (every one 2-D, so every one decayed), float64."""
    P = {n: w.to(torch.float64) for n, w in base.items()}
    L = {n: w.to(torch.float64).clone().requires_grad_(True) for n, w in adapter.items()}
    opt = torch.optim.AdamW(list(L.values()), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    losses, norms, grads = [], [], []
    for step in range(STEPS):
        tokens, targets = ref.batch(data, step)
        opt.zero_grad()
        loss = lora_loss(P, L, tokens, targets)
        loss.backward()
        norms.append(float(torch.sqrt(sum((p.grad**2).sum() for p in L.values()))))
        grads.append({n: p.grad.detach().clone() for n, p in L.items()})
        opt.step()
        losses.append(loss.item())
    return losses, norms, {n: p.detach() for n, p in L.items()}, grads


WEIGHTS_DTYPE = "f32"  # set from --weights-dtype in main()
SHAPE = ["--layers", str(ref.LAYERS), "--dim", str(ref.DIM), "--heads", str(ref.HEADS),
         "--vocab", str(ref.VOCAB), "--ctx", str(ref.CTX), "--batch", str(ref.BATCH), "--seq",
         str(ref.SEQ), "--lora", str(RANK), "--lora-alpha", str(ALPHA), "--lora-targets",
         ",".join(TARGETS)]


def arena_cap(remat):
    full = json.loads(ref.run([remat, "plan", *SHAPE, "--policy", "none", "--json"]))["arena_bytes"]
    r = subprocess.run([remat, "plan", *SHAPE, "--arena", "1"], capture_output=True, text=True)
    found = re.search(r"minimum is (\d+) bytes", r.stderr)
    if r.returncode == 0 or not found:
        raise RuntimeError(f"`remat plan --lora --arena 1` did not name the minimum: {r.stderr}")
    minimum = int(found.group(1))
    return (minimum + full) // 2, minimum, full


def remat_train(remat, workdir, name, base, adapter_dir, data, memory_flags):
    out = os.path.join(workdir, name + "_adapter")
    merged = os.path.join(workdir, name + "_merged.safetensors")
    log = os.path.join(workdir, name + ".json")
    ref.run([remat, "train", "--init", base, "--lora-init", adapter_dir, "--data", data,
             "--batch", str(ref.BATCH), "--seq", str(ref.SEQ), "--steps", str(STEPS), "--lr",
             str(LR), "--wd", str(WD), "--beta1", str(BETAS[0]), "--beta2", str(BETAS[1]),
             "--eps", str(EPS), "--weights-dtype", WEIGHTS_DTYPE, *memory_flags,
             "--save-adapter", out, "--merge-out", merged,
             "--log-json", log, "--quiet"])
    with open(log) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    steps = [l for l in lines if "step" in l and "loss" in l and not l.get("summary")]
    with open(os.path.join(out, "adapter_config.json")) as f:
        config = json.load(f)
    return ([l["loss"] for l in steps], [l.get("grad_norm") for l in steps],
            ref.read_safetensors(os.path.join(out, "adapter_model.safetensors")),
            ref.read_safetensors(merged), config, lines[-1])


def check_merged(checks, label, merged, adapter, base):
    worst = 0.0
    for name, w in base.items():
        want = w.to(torch.float64)
        module = name[: -len(".weight")]
        if name.endswith(".weight") and peft_key(module, "A") in adapter:
            a, b = adapter[peft_key(module, "A")], adapter[peft_key(module, "B")]
            want = want + SCALE * (b @ a).T  # Conv1D [in, out]: fan_in_fan_out
            err = float((merged[name] - want).abs().max())
            worst = max(worst, err)
            checks.check(err <= MERGE_ATOL, f"{label}: merged {name} is off by {err:.2e}")
        else:
            checks.check(torch.equal(merged[name], want), f"{label}: merged {name} is not the base")
    print(f"{label}: merged weights within {worst:.2e} of W + scale·(B·A)ᵀ (tolerance {MERGE_ATOL:g})")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True, help="path of the remat binary")
    ap.add_argument("--workdir", required=True, help="directory for the weights, data and logs")
    ap.add_argument("--weights-dtype", choices=["f32", "f16", "bf16"], default="f32",
                    help="storage of the frozen base in remat (and its rounding in the reference)")
    ap.add_argument("--perturb", choices=["unrounded"],
                    help="a planted mistake the comparison must catch")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    global WEIGHTS_DTYPE
    WEIGHTS_DTYPE = args.weights_dtype

    base = ref.initial_weights()
    base_path = os.path.join(args.workdir, "base.safetensors")
    ref.write_safetensors(base_path, [(n, base[n]) for n, _ in ref.parameter_shapes()],
                          {"n_head": str(ref.HEADS)})
    adapter = initial_adapter(base)
    adapter_dir = os.path.join(args.workdir, "peft_init")
    write_adapter(adapter_dir, adapter)
    data_bytes = ref.training_text()
    data = os.path.join(args.workdir, "data.txt")
    with open(data, "wb") as f:
        f.write(data_bytes)

    stored = stored_base(base, "f32" if args.perturb == "unrounded" else args.weights_dtype)
    ref_losses, ref_norms, ref_adapter, ref_grads = reference_run(stored, adapter, data_bytes)
    cap, minimum, full = arena_cap(args.remat)
    checks = ref.Checks()
    if args.weights_dtype != "f32":  # the rounding changes the base, so it is really tested
        changed = sum(int((stored_base(base, args.weights_dtype)[n] != w).sum())
                      for n, w in base.items())
        checks.check(changed > 0, f"rounding to {args.weights_dtype} changed no weight")
    checks.check(minimum < cap < full, f"arena cap {cap} is not between the minimum {minimum} and "
                 f"the store-everything arena {full}: the capped run would not force recompute")
    saved_by_run = []
    for label, flags in (("lora every:1", ["--policy", "every:1"]),
                         (f"lora arena cap {cap}", ["--arena", str(cap)]),
                         ("lora every:1 loss chunk 64",
                          ["--policy", "every:1", "--loss-chunk", "64"])):
        name = label.replace(" ", "_").replace(":", "_")
        losses, norms, saved, merged, config, summary = remat_train(
            args.remat, args.workdir, name, base_path, adapter_dir, data, flags)
        ref.compare(checks, label, losses, norms, saved, summary, ref_losses, ref_norms,
                    ref_adapter, ref_grads, adapter)
        checks.check(config.get("r") == RANK and config.get("lora_alpha") == ALPHA and
                     config.get("target_modules") == TARGETS and config.get("fan_in_fan_out") is True,
                     f"{label}: adapter_config.json says {config}")
        check_merged(checks, label, merged, saved, stored)
        saved_by_run.append(saved)
    for other, label in ((1, "capped"), (2, "chunked-loss")):
        checks.check(all(torch.equal(saved_by_run[0][n], saved_by_run[other][n])
                         for n in ref_adapter),
                     f"the every:1 and the {label} run saved different adapters")
    print(f"PyTorch float64 losses: {', '.join(f'{l:.6f}' for l in ref_losses)}; adapter gradient "
          f"norms: {', '.join(f'{n:.6f}' for n in ref_norms)}")
    print(f"pytorch LoRA comparison (weights {args.weights_dtype}): {checks.passed} passed, "
          f"{checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed remat run or an unreadable file: one clear message
        print(f"pytorch LoRA comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
