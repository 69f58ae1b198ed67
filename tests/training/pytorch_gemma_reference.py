#!/usr/bin/python3
"""remat against PyTorch for Gemma 3's text model, end to end, through Hugging Face folders.

Builds odd-sized Gemma 3 models (model_type gemma3_text; L=3 with a global layer every second
layer, so layers 0 and 2 are local and layer 1 global; C=48, 3 query heads of 16 sharing 1
key/value head, so heads x head_dim = 48 only by chance of the widths, MLP 80 wide, vocabulary
300) and writes each as a Hugging Face folder (config.json and model.safetensors). Trains it for 2
AdamW steps with `remat train --init DIR --save OUT_DIR` under the policies none and every:1 and
under an arena cap, repeats the same steps in float64 PyTorch written here as transformers'
Gemma3ForCausalLM computes (the embedding times sqrt(C), RMSNorm x * rsqrt(mean(x^2) + eps) *
(1 + w), a norm before and after attention and the MLP, per-head q/k norms, RoPE with base
rope_theta on global layers and rope_local_base_freq on local ones, scores scaled by
query_pre_attn_scalar^-1/2, sliding-window causal attention on local layers, GeGLU with the tanh
GELU, a tied head), and compares per-step losses, gradient norms and every saved weight with the
tolerances of the GPT-2 comparison (pytorch_reference.py).

Variants: `gemma3` has a window of 29 (as long as the context, so every layer sees all keys at
SEQ 23) and query_pre_attn_scalar = head_dim; `gemma3_linear_rope` adds rope_scaling linear with
factor 4, which transformers applies to the global layer only; `gemma3_window` has a window of 4 and
query_pre_attn_scalar 24, so local layers see 4 keys and every score is scaled otherwise than
1/sqrt(head_dim).

Usage: pytorch_gemma_reference.py --remat PATH/TO/remat --workdir DIR [--variants A,B]
       [--perturb offset|embed_scale|window|local_rope|linear]
--perturb plants one mistake in the reference (see PERTURBATIONS): the comparison must then fail.
Exit status 0 when every comparison passes, 1 on any mismatch or failure.
"""

import json
import math
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_reference as common  # noqa: E402  (safetensors, data, AdamW run, comparison)
import pytorch_llama_reference as llama  # noqa: E402  (remat runs, arena cap)

LAYERS, DIM, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, CTX = 3, 48, 3, 1, 16, 80, 300, 29
PATTERN = 2  # layer i is global iff (i + 1) % PATTERN == 0: layers 0 and 2 local, 1 global
THETA, LOCAL_THETA, RMS_EPS = 1000000.0, 10000.0, 1e-6
BATCH, SEQ, STEPS = common.BATCH, common.SEQ, common.STEPS
LR, WD, BETAS, EPS = common.LR, common.WD, common.BETAS, common.EPS
SEED = 20251126
VARIANTS = {
    "gemma3": {"window": CTX, "query_scalar": HEAD_DIM},
    "gemma3_linear_rope": {"window": CTX, "query_scalar": HEAD_DIM, "linear": 4.0},
    "gemma3_window": {"window": 4, "query_scalar": 24},
}
PERTURBATIONS = {
    "offset": "RMSNorm gains w instead of 1 + w",
    "embed_scale": "the embedding not multiplied by sqrt(hidden_size)",
    "window": "local layers attend to every earlier key (the sliding window dropped)",
    "local_rope": "local layers rotate with rope_theta instead of rope_local_base_freq",
    "linear": "global layers' frequencies not divided by the linear rope_scaling factor",
}
PERTURB = None


def parameter_shapes():
    C, Q, KV, D = DIM, HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, HEAD_DIM
    shapes = [("model.embed_tokens.weight", [VOCAB, C])]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes += [
            (p + "input_layernorm.weight", [C]),
            (p + "self_attn.q_proj.weight", [Q, C]),
            (p + "self_attn.k_proj.weight", [KV, C]),
            (p + "self_attn.v_proj.weight", [KV, C]),
            (p + "self_attn.q_norm.weight", [D]),
            (p + "self_attn.k_norm.weight", [D]),
            (p + "self_attn.o_proj.weight", [C, Q]),
            (p + "post_attention_layernorm.weight", [C]),
            (p + "pre_feedforward_layernorm.weight", [C]),
            (p + "mlp.gate_proj.weight", [FFN, C]),
            (p + "mlp.up_proj.weight", [FFN, C]),
            (p + "mlp.down_proj.weight", [C, FFN]),
            (p + "post_feedforward_layernorm.weight", [C]),
        ]
    shapes.append(("model.norm.weight", [C]))
    return shapes


def initial_weights():
    """Norm weights are offsets from 1 (0.2 * noise), so that using w for 1 + w is far off;
    q/k projections large so that the per-head norms matter. Rounded to float32."""
    gen = torch.Generator().manual_seed(SEED)
    weights = {}
    for name, shape in parameter_shapes():
        noise = torch.randn(shape, generator=gen, dtype=torch.float64)
        if name.endswith("norm.weight"):
            w = 0.2 * noise
        elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
            w = noise * (0.15 / math.sqrt(2 * LAYERS))
        elif name.endswith("q_proj.weight") or name.endswith("k_proj.weight"):
            w = 0.4 * noise
        else:
            w = 0.15 * noise
        weights[name] = w.to(torch.float32)
    return weights


def is_global(i):
    return (i + 1) % PATTERN == 0


def hf_config(v):
    return {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
        "hidden_size": DIM, "intermediate_size": FFN, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
        "vocab_size": VOCAB, "max_position_embeddings": CTX,
        "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": RMS_EPS,
        "rope_theta": THETA, "rope_local_base_freq": LOCAL_THETA,
        "rope_scaling": {"rope_type": "linear", "factor": v["linear"]} if "linear" in v else None,
        "query_pre_attn_scalar": v["query_scalar"], "sliding_window": v["window"],
        "layer_types": ["full_attention" if is_global(i) else "sliding_attention"
                        for i in range(LAYERS)],
        "attn_logit_softcapping": None, "final_logit_softcapping": None,
        "attention_bias": False, "tie_word_embeddings": True,
    }


def write_folder(path, v, weights):
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    config = dict(hf_config(v), torch_dtype="float32")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors = [(n, weights[n]) for n, _ in parameter_shapes()]
    common.write_safetensors(os.path.join(path, "model.safetensors"), tensors, {"format": "pt"})


# ---------------------------------------------------------------------------------------------
# Gemma 3 written plainly in float64, as transformers' modeling_gemma3 computes it.
# ---------------------------------------------------------------------------------------------
def rmsnorm(x, w):
    gain = w if PERTURB == "offset" else 1.0 + w
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + RMS_EPS) * gain


def rope(x, T, theta, factor=None):
    """x: [B, heads, T, D]; the two halves of each head form the pairs, as in transformers;
    `factor`: rope_type linear, every frequency divided by it."""
    D = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    if factor and PERTURB != "linear":
        inv_freq = inv_freq / factor
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    half = D // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * emb.cos() + rotated * emb.sin()


def attention(P, p, h, v, layer):
    B, T, _ = h.shape
    D = HEAD_DIM

    def proj(name, heads, norm=None):
        y = (h @ P[p + f"self_attn.{name}.weight"].T).view(B, T, heads, D)
        if norm:
            y = rmsnorm(y, P[p + f"self_attn.{norm}.weight"])
        return y.transpose(1, 2)

    glob = is_global(layer)
    theta = THETA if glob or PERTURB == "local_rope" else LOCAL_THETA
    factor = v.get("linear") if glob else None  # transformers scales the global layers only
    q = rope(proj("q_proj", HEADS, "q_norm"), T, theta, factor)
    k = rope(proj("k_proj", KV_HEADS, "k_norm"), T, theta, factor)
    val = proj("v_proj", KV_HEADS)
    k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
    val = val.repeat_interleave(HEADS // KV_HEADS, dim=1)
    scores = (q @ k.transpose(-2, -1)) * v["query_scalar"] ** -0.5
    t = torch.arange(T)
    allowed = t[None, :] <= t[:, None]  # key <= query
    if not glob and PERTURB != "window":  # keys t - window + 1 .. t
        allowed &= t[None, :] > t[:, None] - v["window"]
    y = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ val
    return y.transpose(1, 2).reshape(B, T, HEADS * D) @ P[p + "self_attn.o_proj.weight"].T


def gemma_loss(P, tokens, targets, v):
    B, T = tokens.shape
    x = P["model.embed_tokens.weight"][tokens]
    if PERTURB != "embed_scale":
        # transformers keeps sqrt(hidden_size) as a buffer in the weights' dtype (float32 here).
        x = x * float(torch.tensor(DIM ** 0.5, dtype=torch.float32))
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        a = attention(P, p, rmsnorm(x, P[p + "input_layernorm.weight"]), v, i)
        x = x + rmsnorm(a, P[p + "post_attention_layernorm.weight"])
        h = rmsnorm(x, P[p + "pre_feedforward_layernorm.weight"])
        gate = torch.nn.functional.gelu(h @ P[p + "mlp.gate_proj.weight"].T, approximate="tanh")
        m = (gate * (h @ P[p + "mlp.up_proj.weight"].T)) @ P[p + "mlp.down_proj.weight"].T
        x = x + rmsnorm(m, P[p + "post_feedforward_layernorm.weight"])
    x = rmsnorm(x, P["model.norm.weight"])
    logits = x @ P["model.embed_tokens.weight"].T
    return torch.nn.functional.cross_entropy(logits.reshape(B * T, VOCAB), targets.reshape(B * T))


def reference_run(start, data, v, clip):
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
        loss = gemma_loss(params, tokens, targets, v)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm=clip)))
        grads.append({n: p.grad.detach().clone() for n, p in params.items()})
        opt.step()
        losses.append(loss.item())
    return losses, norms, {n: p.detach() for n, p in params.items()}, grads


def clip_between(start, data, v):
    """A clip threshold between the unclipped steps' gradient norms, from the unperturbed
    reference, so that remat's runs do not depend on --perturb."""
    global PERTURB
    planted, PERTURB = PERTURB, None
    try:
        _, norms, _, _ = reference_run(start, data, v, float("inf"))
    finally:
        PERTURB = planted
    return float(f"{math.sqrt(norms[0] * norms[1]):.3g}")


def check_variant(checks, remat, workdir, name, v, data_bytes, data):
    start = initial_weights()
    folder = os.path.join(workdir, name)
    write_folder(folder, v, start)
    clip = clip_between(start, data_bytes, v)
    ref_losses, ref_norms, ref_weights, ref_grads = reference_run(start, data_bytes, v, clip)
    checks.check(min(ref_norms) < clip < max(ref_norms), f"{name}: gradient norms {ref_norms} do "
                 f"not straddle the clip threshold {clip}: the test would not see a wrong clip factor")
    cap, minimum, full = llama.arena_cap(remat, folder)
    checks.check(minimum < cap < full, f"{name}: arena cap {cap} is not between the minimum "
                 f"{minimum} and the store-everything arena {full}")
    runs = [("none", ["--policy", "none"]), ("every:1", ["--policy", "every:1"]),
            (f"arena cap {cap}", ["--arena", str(cap)])]
    saved_by_run = []
    for label, flags in runs:
        run_name = name + "_" + label.replace(" ", "_").replace(":", "_")
        losses, norms, saved, summary, saved_config = llama.remat_train(
            remat, workdir, run_name, folder, data, clip, flags)
        common.compare(checks, f"{name}, {label}", losses, norms, saved, summary, ref_losses,
                       ref_norms, ref_weights, ref_grads, start)
        for key, want in hf_config(v).items():
            checks.check(saved_config.get(key) == want, f"{name}, {label}: saved config.json has "
                         f"{key} = {saved_config.get(key)!r}, expected {want!r}")
        saved_by_run.append(saved)
    checks.check(all(torch.equal(saved_by_run[0][n], s[n]) for s in saved_by_run[1:]
                     for n in ref_weights), f"{name}: the runs under different policies saved "
                 "different weights")
    print(f"{name}: PyTorch float64 losses {', '.join(f'{l:.6f}' for l in ref_losses)}; gradient "
          f"norms {', '.join(f'{n:.6f}' for n in ref_norms)}; clip {clip}")


def start(perturb):
    global PERTURB
    PERTURB = perturb


def main():
    return common.variants_main(__doc__, VARIANTS, PERTURBATIONS, "pytorch gemma comparison",
                                start, check_variant)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed remat run or an unreadable file: one clear message
        print(f"pytorch gemma comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
