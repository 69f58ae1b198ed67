#!/usr/bin/python3
"""remat against PyTorch, end to end.

Builds a GPT-2 with odd sizes (L=3, C=48, 3 heads, ctx 29, vocab 256), writes its weights as an
F32 safetensors file, trains it for 2 AdamW steps with `remat train --init` (once under the policy
every:1 and once under an arena cap), repeats the same 2 steps in float64 PyTorch, and compares the
per-step losses and every saved weight.

With --act-dtype bf16 or f16, remat stores every activation in 16 bits and the reference rounds
at the same points: the output of each op whose output remat stores (embedding, LayerNorm, each
matmul, attention, GELU, residual sums, logits), rounded to nearest even, with gradients passing
through the rounding unchanged (remat's backward computes in fp32 from the stored values).

Usage: pytorch_reference.py --remat PATH/TO/remat --workdir DIR [--act-dtype bf16|f16]
Exit status 0 when every comparison passes, 1 on any mismatch or failure.
"""

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys

import torch

# ---- the configuration under test: odd sizes everywhere, no tile multiples ----
LAYERS, DIM, HEADS, VOCAB, CTX = 3, 48, 3, 256, 29
BATCH, SEQ, STEPS = 3, 23, 2
# The clip threshold lies between the two steps' gradient norms (4.47 and 3.92): step 1 is clipped,
# step 2 is not. AdamW is invariant to a gradient scale shared by all steps, so clipping both (or
# neither) would leave a wrong clip factor invisible in the weights; main() checks this holds.
LR, WD, BETAS, EPS, CLIP = 1e-3, 0.1, (0.9, 0.999), 1e-8, 4.2
SEED = 20240605

# ---- tolerances (fp32 remat against an fp64 reference; never widened to make a run pass) ----
# Loss: remat's forward is fp32 with sums over at most 4C = 192 terms and a 256-way softmax, so its
# rounding error is a few float32 ulps (6e-8) times a small factor: ~1e-6 relative. 1e-5 leaves a
# 10x margin and still catches real errors (a data window shifted by one byte moves the loss 5e-3).
# The same bound holds for the logged global gradient norm (before clipping): a sum of
# squares of fp32 gradients that are ~1e-6 relative off. It is checked because AdamW is nearly
# invariant to a gradient scale common to all steps, so a wrong norm would barely show in weights.
# (A LayerNorm eps of 1e-6 or GELU with erf instead of tanh move the norm 3e-5 to 1e-4 here.)
LOSS_RTOL = 1e-5
# Weights: compare the update dw = w_after - w_before, not w itself (w can be ~1 while dw ~ 2e-3, so
# a test on w would hide errors in the update). Per element,
#   |dw_remat - dw_ref| <= W_ATOL + W_RTOL * |dw_ref| + sum over steps of adam_noise(g)
# W_ATOL = 1e-6: float32 storage of w rounds it by up to half an ulp per step (6e-8 for |w| ~ 1)
#   and an update of ~2e-3 carries fp32 rounding of ~1e-9; 1e-6 is well above both.
# W_RTOL = 1e-3 of the update. A wrong bias correction, decay, clip factor, learning rate or
#   gradient moves dw by percent, not by 1e-3.
# adam_noise: AdamW divides by |g|: lr * m_hat / (sqrt(v_hat) + eps). A gradient rounding error
#   delta therefore moves the update by about lr * delta / (|g| + eps), which matters only where the
#   float64 gradient g is tiny against its tensor's gradients (the key bias of attention is one: its
#   exact gradient is 0, since a constant added to a query row's scores leaves the softmax
#   unchanged, so both sides hold rounding noise there). delta = GRAD_NOISE * (the tensor's RMS
#   gradient): PyTorch's own float32 backward of this model is off by up to 5.5e-6 of the RMS,
#   hence 1e-5. The term is capped at 3 * lr (AdamW's step is at most ~1.5 lr either way), and
#   is 0 where g is exactly 0 (unused positions: exactly 0 in float32 too).
W_ATOL, W_RTOL, GRAD_NOISE = 1e-6, 1e-3, 1e-5
# The noise term must not hollow the test out: at most MAX_LOOSE_FRACTION of all elements may get
# a tolerance above LOOSE (5% of a step); this configuration has 174 (0.18%), 144 of them the key
# biases.
LOOSE, MAX_LOOSE_FRACTION = 1e-4, 0.02

# ---- 16-bit activations (--act-dtype): looser, stated tolerances ----
# The reference rounds float64 values once where remat rounds its float32 results: an element
# within float32 error of a rounding boundary (bf16 steps are 2^-8 relative, f16 2^-11) lands one
# unit away, and such units propagate, to the gradients most. Hence losses within about the unit
# roundoff (bf16 2e-3, f16 5e-4), gradient noise of 1e-2 (bf16) and 2e-3 (f16) of a tensor's RMS
# gradient, and updates within 5% (bf16) and 2% (f16). Measured here: bf16 step losses 8e-6 off,
# gradient norms 4.4e-4, worst update error 0.66 of its tolerance; f16 6.5e-5 and 0.66. Against
# the float64 model left unrounded (--unrounded-reference, a ctest that must fail) the bf16 run
# fails 20 checks, worst update error 5x its tolerance: the rounding points are what is checked.
ACT16_TOLERANCES = {
    # dtype: (LOSS_RTOL, W_ATOL, W_RTOL, GRAD_NOISE, LOOSE, MAX_LOOSE_FRACTION)
    "bf16": (2e-3, 1e-5, 5e-2, 1e-2, 1e-3, 0.05),
    "f16": (5e-4, 2e-6, 2e-2, 2e-3, 1e-3, 0.05),
}
ACT_DTYPE = None  # None: float64 throughout; "bf16" / "f16": round stored activations


def stored(x):
    """x as remat stores an activation under ACT_DTYPE, the gradient passing through unchanged."""
    if ACT_DTYPE is None:
        return x
    t = torch.bfloat16 if ACT_DTYPE == "bf16" else torch.float16
    return x + (x.to(torch.float32).to(t).to(torch.float64) - x).detach()


# ---------------------------------------------------------------------------------------------
# safetensors by hand: 8-byte little-endian header length, JSON header, raw little-endian data.
# ---------------------------------------------------------------------------------------------
def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, float32 torch tensor)."""
    header = {"__metadata__": metadata}
    offset = 0
    for name, t in tensors:
        nbytes = t.numel() * 4
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the format allows padding the header with spaces
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, t in tensors:
            f.write(t.contiguous().numpy().astype("<f4").tobytes())


def read_safetensors(path):
    """Returns {name: float64 tensor} for the F32 tensors in the file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    body = data[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {info['dtype']}, expected F32")
        start, end = info["data_offsets"]
        flat = torch.frombuffer(bytearray(body[start:end]), dtype=torch.float32)
        out[name] = flat.reshape(info["shape"]).to(torch.float64)
    return out


# ---------------------------------------------------------------------------------------------
# The model: GPT-2 written plainly in float64.
# ---------------------------------------------------------------------------------------------
def parameter_shapes():
    """Hugging Face GPT-2 names and shapes; Conv1D weights are [in, out]."""
    C = DIM
    shapes = [("wte.weight", [VOCAB, C]), ("wpe.weight", [CTX, C])]
    for i in range(LAYERS):
        p = f"h.{i}."
        shapes += [
            (p + "ln_1.weight", [C]), (p + "ln_1.bias", [C]),
            (p + "attn.c_attn.weight", [C, 3 * C]), (p + "attn.c_attn.bias", [3 * C]),
            (p + "attn.c_proj.weight", [C, C]), (p + "attn.c_proj.bias", [C]),
            (p + "ln_2.weight", [C]), (p + "ln_2.bias", [C]),
            (p + "mlp.c_fc.weight", [C, 4 * C]), (p + "mlp.c_fc.bias", [4 * C]),
            (p + "mlp.c_proj.weight", [4 * C, C]), (p + "mlp.c_proj.bias", [C]),
        ]
    shapes += [("ln_f.weight", [C]), ("ln_f.bias", [C])]
    return shapes


def initial_weights():
    """GPT-2's initialisation scheme with a 5x larger scale (0.1, residual projections
    0.1/sqrt(2L)), and random biases and LayerNorm parameters: with GPT-2's 0.02 the GELU inputs
    and attention scores stay so small that GELU is nearly linear and the softmax nearly uniform,
    and errors there would not show. Rounded to float32: these exact values are both the file
    remat loads and the float64 reference's start."""
    gen = torch.Generator().manual_seed(SEED)
    weights = {}
    for name, shape in parameter_shapes():
        noise = torch.randn(shape, generator=gen, dtype=torch.float64)
        if name.endswith("c_proj.weight"):
            w = noise * (0.1 / math.sqrt(2 * LAYERS))  # residual projections
        elif ".ln_" in name or name.startswith("ln_f"):
            w = (1.0 if name.endswith("weight") else 0.0) + 0.1 * noise
        elif name.endswith("bias"):
            w = 0.02 * noise
        else:
            w = 0.1 * noise
        weights[name] = w.to(torch.float32)
    return weights


def layernorm(x, w, b):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased variance, as GPT-2
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def attention(qkv):
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // HEADS
    q, k, v = qkv.split(C, dim=2)  # [q | k | v], each holding the heads side by side
    q = q.view(B, T, HEADS, hs).transpose(1, 2)  # [B, NH, T, hs]
    k = k.view(B, T, HEADS, hs).transpose(1, 2)
    v = v.view(B, T, HEADS, hs).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return y.transpose(1, 2).reshape(B, T, C)


def gpt2_logits(P, tokens):
    B, T = tokens.shape
    S = stored  # each op's stored output (identity in float64 runs)
    x = S(P["wte.weight"][tokens] + P["wpe.weight"][:T])
    for i in range(LAYERS):
        p = f"h.{i}."
        h = S(layernorm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"]))
        qkv = S(h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"])
        x = S(x + S(S(attention(qkv)) @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"]))
        h = S(layernorm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"]))
        h = S(gelu_tanh(S(h @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"])))
        x = S(x + S(h @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"]))
    x = S(layernorm(x, P["ln_f.weight"], P["ln_f.bias"]))
    return S(x @ P["wte.weight"].T).reshape(B * T, VOCAB)  # tied head


def gpt2_loss(P, tokens, targets):
    return torch.nn.functional.cross_entropy(gpt2_logits(P, tokens), targets.reshape(-1))


# ---------------------------------------------------------------------------------------------
# Data: the exact contract of `remat train --data`.
# ---------------------------------------------------------------------------------------------
def training_text():
    """110 bytes, so that the 6 windows of the 2 steps wrap around (len - T - 1 = 86) and the
    modulo in the contract is exercised; UTF-8 and the bytes 0x00 and 0xFF test tokens >= 128."""
    text = "Gradient checkpointing trades compute for memory: café, naïve, 東京. ".encode("utf-8")
    data = (text + bytes([0x00, 0xFF, 0x80, 0x7F]) + text)[:110]
    assert len(data) == 110
    return data


def batch(data, step):
    span = len(data) - SEQ - 1
    rows = []
    for b in range(BATCH):
        start = ((step * BATCH + b) * SEQ) % span
        rows.append(list(data[start : start + SEQ + 1]))
    window = torch.tensor(rows, dtype=torch.long)
    return window[:, :SEQ], window[:, 1:]


# ---------------------------------------------------------------------------------------------
# The float64 reference: 2 steps of AdamW with global-norm clipping.
# ---------------------------------------------------------------------------------------------
def reference_run(start, data):
    params = {n: w.to(torch.float64).clone().requires_grad_(True) for n, w in start.items()}
    decay = [p for p in params.values() if p.dim() == 2]  # weight decay on 2-D tensors only
    no_decay = [p for p in params.values() if p.dim() != 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}],
        lr=LR, betas=BETAS, eps=EPS)
    losses, norms, grads = [], [], []
    for step in range(STEPS):
        tokens, targets = batch(data, step)
        opt.zero_grad()
        loss = gpt2_loss(params, tokens, targets)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm=CLIP)))
        grads.append({n: p.grad.detach().clone() for n, p in params.items()})
        opt.step()
        losses.append(loss.item())
    return losses, norms, {n: p.detach() for n, p in params.items()}, grads


# ---------------------------------------------------------------------------------------------
# Running remat and comparing.
# ---------------------------------------------------------------------------------------------
def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def arena_cap(remat):
    """An arena cap halfway between the smallest feasible plan and storing everything, from
    `remat plan` (so the cap forces recompute whatever the planner's exact byte counts)."""
    shape = ["--layers", str(LAYERS), "--dim", str(DIM), "--heads", str(HEADS), "--vocab",
             str(VOCAB), "--ctx", str(CTX), "--batch", str(BATCH), "--seq", str(SEQ), "--json"]
    full = json.loads(run([remat, "plan", *shape, "--policy", "none"]))["arena_bytes"]
    r = subprocess.run([remat, "plan", *shape, "--arena", "1"], capture_output=True, text=True)
    # A budget below the smallest plan is an error naming it: "... the minimum is N bytes".
    found = re.search(r"minimum is (\d+) bytes", r.stderr)
    if r.returncode == 0 or not found:
        raise RuntimeError(f"`remat plan --arena 1` did not name the minimum arena: {r.stderr}")
    minimum = int(found.group(1))
    return (minimum + full) // 2, minimum, full


def remat_train(remat, workdir, name, weights, data, memory_flags):
    out = os.path.join(workdir, f"{name}.safetensors")
    log = os.path.join(workdir, f"{name}.json")
    for p in (out, log):
        if os.path.exists(p):
            os.remove(p)
    run([remat, "train", "--init", weights, "--data", data, "--batch", str(BATCH), "--seq",
         str(SEQ), "--steps", str(STEPS), "--lr", str(LR), "--wd", str(WD), "--beta1",
         str(BETAS[0]), "--beta2", str(BETAS[1]), "--eps", str(EPS), "--grad-clip", str(CLIP),
         *memory_flags, "--act-dtype", ACT_DTYPE or "f32", "--save", out, "--log-json", log,
         "--quiet"])
    with open(log) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    steps = [l for l in lines if "step" in l and "loss" in l and not l.get("summary")]
    return [l["loss"] for l in steps], [l.get("grad_norm") for l in steps], read_safetensors(out), lines[-1]


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}")


def compare(checks, label, losses, norms, saved, summary, ref_losses, ref_norms, ref_weights,
            ref_grads, start):
    checks.check(len(losses) == STEPS, f"{label}: {len(losses)} loss lines in the log, expected {STEPS}")
    worst_loss = 0.0
    for s in range(min(len(losses), STEPS)):
        for what, got, want in (("loss", losses[s], ref_losses[s]), ("gradient norm", norms[s], ref_norms[s])):
            if got is None:
                checks.check(False, f"{label}: step {s + 1}: the log has no {what}")
                continue
            rel = abs(got - want) / abs(want)
            worst_loss = max(worst_loss, rel)
            checks.check(rel <= LOSS_RTOL, f"{label}: step {s + 1} {what} {got:.9g}, PyTorch "
                         f"{want:.9g} (relative error {rel:.2e} > {LOSS_RTOL:g})")
    checks.check(set(saved) == set(ref_weights),
                 f"{label}: saved tensors {sorted(set(saved) ^ set(ref_weights))} differ from the model's")

    worst_abs, worst_strict, worst_ratio, loose, total = 0.0, 0.0, 0.0, 0, 0
    for name, want in ref_weights.items():
        if name not in saved:
            continue
        got = saved[name]
        if list(got.shape) != list(want.shape):
            checks.check(False, f"{label}: {name} has shape {list(got.shape)}, expected {list(want.shape)}")
            continue
        w0 = start[name].to(torch.float64)
        d_got, d_want = got - w0, want - w0
        err = (d_got - d_want).abs()
        tol = W_ATOL + W_RTOL * d_want.abs()
        for g in ref_grads:  # AdamW's amplification of gradient rounding, per step
            noise = GRAD_NOISE * g[name].pow(2).mean().sqrt()
            term = torch.clamp(LR * noise / (g[name].abs() + EPS), max=3 * LR)
            tol = tol + torch.where(g[name] == 0, torch.zeros_like(term), term)
        total += w0.numel()
        loose += int((tol > LOOSE).sum())
        worst_abs = max(worst_abs, float(err.max()))
        if (tol <= LOOSE).any():
            worst_strict = max(worst_strict, float(err[tol <= LOOSE].max()))
        worst_ratio = max(worst_ratio, float((err / tol).max()))
        bad = err > tol
        if bad.any():
            i = int(torch.nonzero(bad.flatten())[0])
            checks.check(False, f"{label}: {name}: {int(bad.sum())} of {w0.numel()} elements outside "
                         f"the tolerance; first at flat index {i}: update {float(d_got.flatten()[i]):.6e}, "
                         f"PyTorch {float(d_want.flatten()[i]):.6e}, allowed difference "
                         f"{float(tol.flatten()[i]):.2e}")
        else:
            checks.check(True, "")
    checks.check(loose <= MAX_LOOSE_FRACTION * total,
                 f"{label}: {loose} of {total} elements have a tolerance above {LOOSE:g} (more than "
                 f"{MAX_LOOSE_FRACTION:.0%}): the weight comparison would be too weak")
    print(f"{label}: policy {summary.get('policy')}, arena {summary.get('arena_bytes')} bytes; "
          f"loss and gradient norm max relative error {worst_loss:.2e} (tolerance {LOSS_RTOL:g}); weight "
          f"update max abs error {worst_strict:.2e} where the tolerance is at most {LOOSE:g}, "
          f"{worst_abs:.2e} over all ({loose} of {total} elements have a larger tolerance); max "
          f"error/tolerance {worst_ratio:.3f}")



def variants_main(doc, variants, perturbations, title, start, check_variant):
    """The command line of a reference with named model variants (Llama, Gemma): --remat,
    --workdir, --perturb, --variants. start(perturb) runs before any comparison;
    check_variant(checks, remat, workdir, name, variant, data_bytes, data_path) compares one."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True, help="path of the remat binary")
    ap.add_argument("--workdir", required=True, help="directory for the folders, data and logs")
    ap.add_argument("--perturb", choices=sorted(perturbations),
                    help="plant this mistake in the reference: the comparison must then fail")
    ap.add_argument("--variants", default=",".join(variants),
                    help="comma-separated models to compare (default: all of " +
                    ", ".join(variants) + ")")
    args = ap.parse_args()
    chosen = args.variants.split(",")
    for name in chosen:
        if name not in variants:
            ap.error(f"unknown variant {name!r}; choose from {', '.join(variants)}")
    start(args.perturb)
    os.makedirs(args.workdir, exist_ok=True)
    data_bytes = training_text()
    data = os.path.join(args.workdir, "data.txt")
    with open(data, "wb") as f:
        f.write(data_bytes)
    checks = Checks()
    for name in chosen:
        check_variant(checks, args.remat, args.workdir, name, variants[name], data_bytes, data)
    print(f"{title}: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True, help="path of the remat binary")
    ap.add_argument("--workdir", required=True, help="directory for the weights, data and logs")
    ap.add_argument("--act-dtype", choices=["f32", "bf16", "f16"], default="f32",
                    help="activation storage of the remat runs, mirrored by the reference")
    ap.add_argument("--unrounded-reference", action="store_true",
                    help="keep the reference in float64 throughout (must fail with --act-dtype)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    global ACT_DTYPE, LOSS_RTOL, W_ATOL, W_RTOL, GRAD_NOISE, LOOSE, MAX_LOOSE_FRACTION
    if args.act_dtype != "f32":
        ACT_DTYPE = args.act_dtype
        LOSS_RTOL, W_ATOL, W_RTOL, GRAD_NOISE, LOOSE, MAX_LOOSE_FRACTION = ACT16_TOLERANCES[ACT_DTYPE]

    start = initial_weights()
    weights = os.path.join(args.workdir, "init.safetensors")
    write_safetensors(weights, [(n, start[n]) for n, _ in parameter_shapes()], {"n_head": str(HEADS)})
    data_bytes = training_text()
    data = os.path.join(args.workdir, "data.txt")
    with open(data, "wb") as f:
        f.write(data_bytes)

    remat_dtype = ACT_DTYPE
    if args.unrounded_reference:
        ACT_DTYPE = None
    ref_losses, ref_norms, ref_weights, ref_grads = reference_run(start, data_bytes)
    ACT_DTYPE = remat_dtype
    cap, minimum, full = arena_cap(args.remat)
    checks = Checks()
    checks.check(ref_norms[0] > CLIP > ref_norms[1], f"gradient norms {ref_norms} do not straddle the "
                 f"clip threshold {CLIP}: the test would not see a wrong clip factor")
    checks.check(minimum < cap < full, f"arena cap {cap} is not between the minimum {minimum} and "
                 f"the store-everything arena {full}: the capped run would not force recompute")
    runs = [("every:1", ["--policy", "every:1"]), (f"arena cap {cap}", ["--arena", str(cap)])]
    saved_by_run = []
    for label, flags in runs:
        name = label.replace(" ", "_").replace(":", "_")
        losses, norms, saved, summary = remat_train(args.remat, args.workdir, name, weights, data, flags)
        compare(checks, label, losses, norms, saved, summary, ref_losses, ref_norms, ref_weights,
                ref_grads, start)
        saved_by_run.append(saved)

    arena = summary.get("arena_bytes", 0)
    checks.check(arena <= cap and arena < full, f"the capped run's arena {arena} is not below the cap "
                 f"{cap} and the store-everything arena {full}")
    # Checkpointing never changes results: both runs must have saved the very same floats.
    checks.check(all(torch.equal(saved_by_run[0][n], saved_by_run[1][n]) for n in ref_weights),
                 "the every:1 and the capped run saved different weights")
    print(f"PyTorch float64 losses: {', '.join(f'{l:.6f}' for l in ref_losses)}; gradient norms: "
          f"{', '.join(f'{n:.6f}' for n in ref_norms)}")
    print(f"pytorch comparison: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed remat run or an unreadable file: one clear message
        print(f"pytorch comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
