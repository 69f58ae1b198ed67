#!/usr/bin/python3
"""remat against PyTorch for the Llama family, end to end, through Hugging Face model folders.

Builds odd-sized Llama-family models (L=3, C=48, 6 query heads sharing 2 key/value heads, MLP
80 wide, vocabulary 300, RoPE theta 10000): a Llama with an untied head, a Qwen2 (q/k/v biases)
with a tied head, a Llama 3 with llama3 RoPE scaling (factor 8, low 1, high 4, original context
100, so that at head size 8 one frequency is kept, one blended and two divided within the 23
positions), and a Qwen3 (RMSNorm over each head of q and k before RoPE, head_dim 12 so that
heads x head_dim = 72 is not the width 48). Writes each as a Hugging Face folder (config.json and
model.safetensors; the Qwen2 and Qwen3 ones sharded behind model.safetensors.index.json), trains
it for 2 AdamW steps with
`remat train --init DIR --save OUT_DIR` (under the policies none and every:1 and under an arena
cap), repeats the same steps in float64 PyTorch written here (RMSNorm, rotate_half RoPE, repeat_kv
grouped-query attention, SwiGLU), and compares per-step losses, gradient norms and every saved
weight, with the tolerances of the GPT-2 comparison (pytorch_reference.py), whose helpers it uses.

Usage: pytorch_llama_reference.py --remat PATH/TO/remat --workdir DIR [--variants A,B]
       [--perturb eps|rope|kv|llama3|qnorm]
--perturb plants one mistake in the reference (see PERTURBATIONS): the comparison must then fail.
Exit status 0 when every comparison passes, 1 on any mismatch or failure.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_reference as common  # noqa: E402  (safetensors, data, AdamW run, comparison)

# ---- the configuration under test: odd sizes everywhere, no tile multiples ----
LAYERS, DIM, HEADS, KV_HEADS, FFN, VOCAB, CTX = 3, 48, 6, 2, 80, 300, 29
THETA, RMS_EPS = 10000.0, 1e-5
# BATCH, SEQ (23), STEPS, the AdamW settings and the tolerances are the GPT-2 comparison's.
BATCH, SEQ, STEPS = common.BATCH, common.SEQ, common.STEPS
LR, WD, BETAS, EPS = common.LR, common.WD, common.BETAS, common.EPS
SEED = 20251123
# Per variant, the clip threshold lies between the two steps' gradient norms (one step clipped,
# the other not), for the reason the GPT-2 script gives; check_variant() checks that it does.
# head_dim: given only where it is not DIM / HEADS (8); llama3: rope_scaling's factors.
LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 100}
VARIANTS = {
    "llama_untied": {"tied": False, "qkv_bias": False, "sharded": False},
    "qwen2_tied_qkv_bias": {"tied": True, "qkv_bias": True, "sharded": True},
    "llama3_scaled_rope": {"tied": True, "qkv_bias": False, "sharded": False, "llama3": LLAMA3},
    "qwen3_qk_norm": {"tied": True, "qkv_bias": False, "sharded": True, "qk_norm": True,
                      "head_dim": 12},
}
# --perturb NAME plants one mistake in the reference, to show that the comparison catches it.
PERTURBATIONS = {
    "eps": "RMSNorm eps 1e-6 instead of 1e-5",
    "rope": "RoPE on interleaved pairs (GPT-J) instead of the two halves of each head",
    "kv": "query head h reads key/value head h % KV_HEADS instead of h // (HEADS / KV_HEADS)",
    "llama3": "plain RoPE frequencies: the llama3 scaling dropped",
    "qnorm": "no q_norm (k_norm kept)",
}
PERTURB = None


# ---------------------------------------------------------------------------------------------
# Parameters by Hugging Face name (nn.Linear weights are [out, in]).
# ---------------------------------------------------------------------------------------------
def head_dim(v):
    return v.get("head_dim", DIM // HEADS)


def parameter_shapes(v):
    D = head_dim(v)
    C, Q, KV = DIM, HEADS * D, KV_HEADS * D
    shapes = [("model.embed_tokens.weight", [VOCAB, C])]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes.append((p + "input_layernorm.weight", [C]))
        for proj, rows in (("q_proj", Q), ("k_proj", KV), ("v_proj", KV)):
            shapes.append((p + f"self_attn.{proj}.weight", [rows, C]))
            if v["qkv_bias"]:
                shapes.append((p + f"self_attn.{proj}.bias", [rows]))
        if v.get("qk_norm"):
            shapes += [(p + "self_attn.q_norm.weight", [D]), (p + "self_attn.k_norm.weight", [D])]
        shapes += [
            (p + "self_attn.o_proj.weight", [C, Q]),
            (p + "post_attention_layernorm.weight", [C]),
            (p + "mlp.gate_proj.weight", [FFN, C]),
            (p + "mlp.up_proj.weight", [FFN, C]),
            (p + "mlp.down_proj.weight", [C, FFN]),
        ]
    shapes.append(("model.norm.weight", [C]))
    if not v["tied"]:
        shapes.append(("lm_head.weight", [VOCAB, C]))
    return shapes


def initial_weights(v):
    """Scales large enough that SiLU is not linear and the softmax not uniform (see the GPT-2
    script); norms and biases random too. Rounded to float32: the exact start of both sides."""
    gen = torch.Generator().manual_seed(SEED)
    weights = {}
    for name, shape in parameter_shapes(v):
        noise = torch.randn(shape, generator=gen, dtype=torch.float64)
        if name.endswith("norm.weight"):
            w = 1.0 + 0.1 * noise
        elif name.endswith(".bias"):
            w = 0.1 * noise
        elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
            w = noise * (0.15 / math.sqrt(2 * LAYERS))
        elif v.get("qk_norm") and (name.endswith("q_proj.weight") or name.endswith("k_proj.weight")):
            w = 0.4 * noise  # heads far from unit RMS, so that the per-head norms matter
        else:
            w = 0.15 * noise
        weights[name] = w.to(torch.float32)
    return weights


def hf_config(v):
    model_type = "qwen3" if v.get("qk_norm") else "qwen2" if v["qkv_bias"] else "llama"
    config = {
        "architectures": [{"qwen3": "Qwen3ForCausalLM", "qwen2": "Qwen2ForCausalLM",
                           "llama": "LlamaForCausalLM"}[model_type]],
        "model_type": model_type,
        "hidden_size": DIM, "intermediate_size": FFN, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "vocab_size": VOCAB,
        "max_position_embeddings": CTX, "hidden_act": "silu", "rms_norm_eps": RMS_EPS,
        "rope_theta": THETA, "rope_scaling": None, "tie_word_embeddings": v["tied"],
        "torch_dtype": "float32",
    }
    if "head_dim" in v:
        config["head_dim"] = v["head_dim"]
    if "llama3" in v:
        config["rope_scaling"] = {"rope_type": "llama3", **v["llama3"]}
    if model_type != "llama":
        config["use_sliding_window"] = False
    if model_type != "qwen2":
        config["attention_bias"] = False
    return config


def write_folder(path, v, weights):
    """config.json and the weights: one model.safetensors, or two shards and their index."""
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(hf_config(v), f, indent=2)
    tensors = [(n, weights[n]) for n, _ in parameter_shapes(v)]
    if not v["sharded"]:
        common.write_safetensors(os.path.join(path, "model.safetensors"), tensors, {"format": "pt"})
        return
    half = len(tensors) // 2
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {}
    for part, file in zip((tensors[:half], tensors[half:]), files):
        common.write_safetensors(os.path.join(path, file), part, {"format": "pt"})
        weight_map.update({n: file for n, _ in part})
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 4 * sum(t.numel() for _, t in tensors)},
                   "weight_map": weight_map}, f)


# ---------------------------------------------------------------------------------------------
# The model: the Llama family written plainly in float64, as transformers computes it.
# ---------------------------------------------------------------------------------------------
def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


def rotate_half(x):
    if PERTURB == "rope":  # pairs (0, 1), (2, 3), ...
        pairs = x.view(*x.shape[:-1], -1, 2)
        return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama3_inv_freq(inv_freq, s):
    """transformers' _compute_llama3_parameters, in float64."""
    orig, low, high = s["original_max_position_embeddings"], s["low_freq_factor"], \
        s["high_freq_factor"]
    low_freq_wavelen, high_freq_wavelen = orig / low, orig / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / s["factor"], inv_freq)
    smooth = (orig / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / s["factor"] + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope(x, T, v):
    """x: [B, heads, T, hd]. Position t, pair i rotates by t * theta^(-2i/hd) (llama3-scaled when
    the variant says so); the two halves of the head (not interleaved pairs) form the pairs, as
    in transformers."""
    D = x.shape[-1]
    inv_freq = 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    if "llama3" in v and PERTURB != "llama3":
        inv_freq = llama3_inv_freq(inv_freq, v["llama3"])
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    if PERTURB == "rope":
        emb = freqs.repeat_interleave(2, dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def attention(P, p, h, v, eps):
    B, T, _ = h.shape
    D = head_dim(v)

    def proj(name, heads, norm=None):
        y = h @ P[p + f"self_attn.{name}.weight"].T
        if v["qkv_bias"]:
            y = y + P[p + f"self_attn.{name}.bias"]
        y = y.view(B, T, heads, D)
        if norm:  # Qwen3: RMSNorm over each head, before RoPE
            y = rmsnorm(y, P[p + f"self_attn.{norm}.weight"], eps)
        return y.transpose(1, 2)

    q_norm = "q_norm" if v.get("qk_norm") and PERTURB != "qnorm" else None
    q = rope(proj("q_proj", HEADS, q_norm), T, v)
    k = rope(proj("k_proj", KV_HEADS, "k_norm" if v.get("qk_norm") else None), T, v)
    val = proj("v_proj", KV_HEADS)
    # repeat_kv: query head h reads key/value head h // (HEADS / KV_HEADS).
    repeat = (lambda t: t.repeat(1, HEADS // KV_HEADS, 1, 1)) if PERTURB == "kv" else \
        (lambda t: t.repeat_interleave(HEADS // KV_HEADS, dim=1))
    k, val = repeat(k), repeat(val)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    y = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ val
    return y.transpose(1, 2).reshape(B, T, HEADS * D) @ P[p + "self_attn.o_proj.weight"].T


def llama_loss(P, tokens, targets, v, eps):
    B, T = tokens.shape
    x = P["model.embed_tokens.weight"][tokens]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        x = x + attention(P, p, rmsnorm(x, P[p + "input_layernorm.weight"], eps), v, eps)
        h = rmsnorm(x, P[p + "post_attention_layernorm.weight"], eps)
        gate = torch.nn.functional.silu(h @ P[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ P[p + "mlp.up_proj.weight"].T)) @ P[p + "mlp.down_proj.weight"].T
    x = rmsnorm(x, P["model.norm.weight"], eps)
    head = P["model.embed_tokens.weight" if v["tied"] else "lm_head.weight"]
    logits = x @ head.T
    return torch.nn.functional.cross_entropy(logits.reshape(B * T, VOCAB), targets.reshape(B * T))


def reference_run(start, data, v, clip, eps):
    """2 AdamW steps (decay on 2-D tensors only) with global-norm clipping, in float64."""
    params = {n: w.to(torch.float64).clone().requires_grad_(True) for n, w in start.items()}
    opt = torch.optim.AdamW(
        [{"params": [p for p in params.values() if p.dim() == 2], "weight_decay": WD},
         {"params": [p for p in params.values() if p.dim() != 2], "weight_decay": 0.0}],
        lr=LR, betas=BETAS, eps=EPS)
    losses, norms, grads = [], [], []
    for step in range(STEPS):
        tokens, targets = common.batch(data, step)
        opt.zero_grad()
        loss = llama_loss(params, tokens, targets, v, eps)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm=clip)))
        # A parameter the (perturbed) model never reads has no gradient: zero.
        grads.append({n: p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
                      for n, p in params.items()})
        opt.step()
        losses.append(loss.item())
    return losses, norms, {n: p.detach() for n, p in params.items()}, grads


# ---------------------------------------------------------------------------------------------
# Running remat and comparing.
# ---------------------------------------------------------------------------------------------
def arena_cap(remat, folder):
    """Halfway between the smallest feasible arena and storing everything, from `remat plan`."""
    shape = ["--init", folder, "--batch", str(BATCH), "--seq", str(SEQ), "--json"]
    full = json.loads(common.run([remat, "plan", *shape, "--policy", "none"]))["arena_bytes"]
    r = subprocess.run([remat, "plan", *shape, "--arena", "1"], capture_output=True,
                              text=True)
    found = re.search(r"minimum is (\d+) bytes", r.stderr)
    if r.returncode == 0 or not found:
        raise RuntimeError(f"`remat plan --arena 1` did not name the minimum arena: {r.stderr}")
    minimum = int(found.group(1))
    return (minimum + full) // 2, minimum, full


def remat_train(remat, workdir, name, folder, data, clip, memory_flags):
    out = os.path.join(workdir, f"{name}.out")
    log = os.path.join(workdir, f"{name}.json")
    if os.path.exists(out):
        shutil.rmtree(out)
    if os.path.exists(log):
        os.remove(log)
    common.run([remat, "train", "--init", folder, "--data", data, "--batch", str(BATCH), "--seq",
                str(SEQ), "--steps", str(STEPS), "--lr", str(LR), "--wd", str(WD), "--beta1",
                str(BETAS[0]), "--beta2", str(BETAS[1]), "--eps", str(EPS), "--grad-clip",
                str(clip), *memory_flags, "--save", out, "--log-json", log, "--quiet"])
    with open(log) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    steps = [l for l in lines if "step" in l and "loss" in l and not l.get("summary")]
    with open(os.path.join(out, "config.json")) as f:
        saved_config = json.load(f)
    saved = common.read_safetensors(os.path.join(out, "model.safetensors"))
    return [l["loss"] for l in steps], [l.get("grad_norm") for l in steps], saved, lines[-1], \
        saved_config


def clip_between(start, data, v, eps):
    """A clip threshold between the unclipped steps' gradient norms (their geometric mean), from
    the unperturbed reference, so that remat's runs do not depend on --perturb."""
    global PERTURB
    planted, PERTURB = PERTURB, None
    try:
        _, norms, _, _ = reference_run(start, data, v, float("inf"), eps)
    finally:
        PERTURB = planted
    return float(f"{math.sqrt(norms[0] * norms[1]):.3g}")


def check_variant(checks, remat, workdir, name, v, data_bytes, data, eps):
    start = initial_weights(v)
    folder = os.path.join(workdir, name)
    write_folder(folder, v, start)
    clip = clip_between(start, data_bytes, v, RMS_EPS)
    ref_losses, ref_norms, ref_weights, ref_grads = reference_run(start, data_bytes, v, clip, eps)
    checks.check(min(ref_norms) < clip < max(ref_norms), f"{name}: gradient norms {ref_norms} do "
                 f"not straddle the clip threshold {clip}: the test would not see a wrong clip factor")
    cap, minimum, full = arena_cap(remat, folder)
    checks.check(minimum < cap < full, f"{name}: arena cap {cap} is not between the minimum "
                 f"{minimum} and the store-everything arena {full}")
    runs = [("none", ["--policy", "none"]), ("every:1", ["--policy", "every:1"]),
            (f"arena cap {cap}", ["--arena", str(cap)])]
    saved_by_run = []
    for label, flags in runs:
        run_name = name + "_" + label.replace(" ", "_").replace(":", "_")
        losses, norms, saved, summary, saved_config = remat_train(
            remat, workdir, run_name, folder, data, clip, flags)
        common.compare(checks, f"{name}, {label}", losses, norms, saved, summary, ref_losses,
                       ref_norms, ref_weights, ref_grads, start)
        for key, want in hf_config(v).items():
            checks.check(saved_config.get(key) == want, f"{name}, {label}: saved config.json has "
                         f"{key} = {saved_config.get(key)!r}, expected {want!r}")
        saved_by_run.append(saved)
    arena = summary.get("arena_bytes", 0)
    checks.check(arena <= cap and arena < full, f"{name}: the capped run's arena {arena} is not "
                 f"below the cap {cap} and the store-everything arena {full}")
    checks.check(all(torch.equal(saved_by_run[0][n], s[n]) for s in saved_by_run[1:]
                     for n in ref_weights), f"{name}: the runs under different policies saved "
                 "different weights")
    print(f"{name}: PyTorch float64 losses {', '.join(f'{l:.6f}' for l in ref_losses)}; gradient "
          f"norms {', '.join(f'{n:.6f}' for n in ref_norms)}; clip {clip}")


def start(perturb):
    global PERTURB
    PERTURB = perturb


def main():
    def check(checks, remat, workdir, name, v, data_bytes, data):
        eps = 1e-6 if PERTURB == "eps" else RMS_EPS
        check_variant(checks, remat, workdir, name, v, data_bytes, data, eps)
    return common.variants_main(__doc__, VARIANTS, PERTURBATIONS, "pytorch llama comparison",
                                start, check)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed remat run or an unreadable file: one clear message
        print(f"pytorch llama comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
