#!/usr/bin/python3
"""A float64 forward of the Qwen3.5 text model (transformers' model_type qwen3_5_text, llama.cpp's
arch qwen35) written from transformers' published semantics (modeling_qwen3_5.py, which derives
from qwen3_next), independent of remat's code; checked here against llama.cpp's own forward.

Each variant is a random tiny model with every kind of layer: 4 layers, width 64, MLP 96,
vocabulary 100; Gated DeltaNet layers with 2 key heads and 4 value heads (each key head serves
two value heads) of 16, a conv1d of kernel 4; gated full-attention layers with 4 query heads of 32
sharing 2 key/value heads, RoPE on a quarter of each head (8 of 32 dims). `untied` puts a full
attention layer every second layer (layers 1 and 3) and has an output matrix; `tied` every fourth
(layer 3 only, as the released models) and reads the head from the embeddings.

The model is made as a Hugging Face checkpoint would hold it, then written to GGUF the way
llama.cpp's converter writes one (conversion/qwen.py, Qwen3_5TextModel and its bases: f32
tensors, its metadata keys and tensor names, its transforms), with llama.cpp's own gguf-py. The
reference reads the file back through gguf-py and undoes those transforms (undo_converter), so
what it checks is what the file holds. llama.cpp (tests/tools/llama_cpp_logprobs.cpp on the
pinned libllama) evaluates two sequences of SEQ tokens, enough for the recurrence to run many
steps and the conv window to fill; every log-probability of every position is compared, and
so is the reference's row packing 12 tokens of the first sequence with the whole second one
(positions restarting at 0) against llama.cpp's sequences alone.

--perturb plants one mistake in the reference; the comparison must then fail:
  decay-sign            g = +exp(A_log) softplus(a + dt_bias): the state grows instead of decaying
  conv-reversed         the conv1d taps applied in reverse order
  v-heads-unreordered   the converter's V-head reordering (grouped to tiled) left in place
  no-gate               full attention's output not multiplied by sigmoid(gate)
  gate-halves           q_proj's output split in halves (all queries, then all gates) instead of
                        per head (each head's query, then its gate)
  rope-full             RoPE on the whole head instead of its first partial_rotary_factor

Usage: pytorch_qwen35_reference.py --logprobs PATH/remat_llama_cpp_logprobs --gguf-py DIR
       --workdir DIR [--perturb NAME]
Exit status 0 when every comparison passes (or torch is missing: skipped), 1 otherwise.
"""
import argparse
import math
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIPPED: /usr/bin/python3 lacks {e.name} (Debian's python3-torch and python3-numpy)")
    sys.exit(0)

torch.set_default_dtype(torch.float64)
F = torch.nn.functional

SEQ = 20
# How far llama.cpp's float32 CPU forward may be from this float64 one, on any log-probability
# (nats). Measured: at most 3.3e-5 (untied) and 7.6e-5 (tied, whose log-probabilities spread over
# 17+ nats) on the pinned x86-64 build (docs/DESIGN.md, Exactness, gives the run). ggml's f32
# matmuls, its exp/softplus and its recurrence round at every step, and its l2_norm divides by
# max(|x|, rms_norm_eps) where transformers takes rsqrt(|x|^2 + 1e-6): both far below 1e-4 here.
# 1e-3 leaves an order of magnitude for other processors' ggml variants (other summation orders)
# while every planted mistake misses by more than 2 nats.
TOLERANCE = 1e-3

SHAPE = dict(hidden=64, ffn=96, vocab=100, k_heads=2, v_heads=4, dk=16, dv=16, conv=4, heads=4,
             kv_heads=2, head_dim=32, partial_rotary_factor=0.25, rope_theta=10000.0, eps=1e-6,
             layers=4, mrope_section=[2, 1, 1])
VARIANTS = {"untied": dict(SHAPE, interval=2, tied=False, seed=11),
            "tied": dict(SHAPE, interval=4, tied=True, seed=12)}
PERTURBATIONS = ["decay-sign", "conv-reversed", "v-heads-unreordered", "no-gate", "gate-halves",
                 "rope-full"]


def is_linear(cfg, i):
    # transformers' layer_types: "full_attention" when (i + 1) % full_attention_interval == 0.
    return (i + 1) % cfg["interval"] != 0


# --- the model, as a Hugging Face checkpoint holds it ---------------------------------------------

def random_checkpoint(cfg):
    """Hugging Face names and shapes, float32 values far from the usual small initialisation, so
    that each tensor moves the prediction: matrices uniform in +-0.3 (embeddings +-1), zero-centred
    norm weights in +-0.3, the gated norm's plain weight in [0.7, 1.3], conv taps +-0.5, A in
    [0.05, 0.5] and dt_bias +-0.5 so that exp(g) lies around 0.6-0.95 and the state remembers
    several steps."""
    s = cfg
    gen = torch.Generator().manual_seed(cfg["seed"])

    def u(shape, lo, hi):
        return (torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo)

    C, key_dim, value_dim = s["hidden"], s["k_heads"] * s["dk"], s["v_heads"] * s["dv"]
    w = {"model.embed_tokens.weight": u((s["vocab"], C), -1, 1),
         "model.norm.weight": u((C,), -0.3, 0.3)}
    if not cfg["tied"]:
        w["lm_head.weight"] = u((s["vocab"], C), -0.3, 0.3)
    for i in range(s["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = u((C,), -0.3, 0.3)
        w[p + "post_attention_layernorm.weight"] = u((C,), -0.3, 0.3)
        w[p + "mlp.gate_proj.weight"] = u((s["ffn"], C), -0.3, 0.3)
        w[p + "mlp.up_proj.weight"] = u((s["ffn"], C), -0.3, 0.3)
        w[p + "mlp.down_proj.weight"] = u((C, s["ffn"]), -0.3, 0.3)
        if is_linear(cfg, i):
            a = p + "linear_attn."
            w[a + "in_proj_qkv.weight"] = u((2 * key_dim + value_dim, C), -0.3, 0.3)
            w[a + "in_proj_z.weight"] = u((value_dim, C), -0.3, 0.3)
            w[a + "in_proj_a.weight"] = u((s["v_heads"], C), -0.3, 0.3)
            w[a + "in_proj_b.weight"] = u((s["v_heads"], C), -0.3, 0.3)
            w[a + "conv1d.weight"] = u((2 * key_dim + value_dim, 1, s["conv"]), -0.5, 0.5)
            w[a + "A_log"] = torch.log(u((s["v_heads"],), 0.05, 0.5))
            w[a + "dt_bias"] = u((s["v_heads"],), -0.5, 0.5)
            w[a + "norm.weight"] = u((s["dv"],), 0.7, 1.3)
            w[a + "out_proj.weight"] = u((C, value_dim), -0.3, 0.3)
        else:
            a, D = p + "self_attn.", s["head_dim"]
            w[a + "q_proj.weight"] = u((s["heads"] * D * 2, C), -0.3, 0.3)
            w[a + "k_proj.weight"] = u((s["kv_heads"] * D, C), -0.3, 0.3)
            w[a + "v_proj.weight"] = u((s["kv_heads"] * D, C), -0.3, 0.3)
            w[a + "o_proj.weight"] = u((C, s["heads"] * D), -0.3, 0.3)
            w[a + "q_norm.weight"] = u((D,), -0.3, 0.3)
            w[a + "k_norm.weight"] = u((D,), -0.3, 0.3)
    return w


# --- llama.cpp's converter and its inverse --------------------------------------------------------

def reorder_v_heads(t, dim, cfg, inverse=False):
    """conversion/qwen.py _LinearAttentionVReorderBase: Hugging Face groups the value heads by the
    key head they share ([k0: v0 v1][k1: v0 v1]); ggml broadcasts key heads tiled, so the
    converter stores the value heads tiled ([v0 of k0, v0 of k1][v1 of k0, v1 of k1]). Along `dim`,
    rows of `t` are heads of t.shape[dim] // v_heads values each."""
    s = cfg
    r, hd = s["v_heads"] // s["k_heads"], t.shape[dim] // s["v_heads"]
    first, second = (s["k_heads"], r) if not inverse else (r, s["k_heads"])
    shape = list(t.shape)
    t = t.reshape(shape[:dim] + [first, second, hd] + shape[dim + 1:])
    return t.transpose(dim, dim + 1).reshape(shape)


def convert(hf, cfg):
    """Hugging Face name -> (GGUF name, values) as Qwen3_5TextModel.modify_tensors writes them."""
    s = cfg
    qk = 2 * s["k_heads"] * s["dk"]
    out = {"token_embd.weight": hf["model.embed_tokens.weight"],
           "output_norm.weight": hf["model.norm.weight"] + 1}
    if not cfg["tied"]:
        out["output.weight"] = hf["lm_head.weight"]
    for i in range(s["layers"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out[b + "attn_norm.weight"] = hf[p + "input_layernorm.weight"] + 1
        out[b + "post_attention_norm.weight"] = hf[p + "post_attention_layernorm.weight"] + 1
        for hf_name, name in [("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"),
                              ("down_proj", "ffn_down")]:
            out[b + name + ".weight"] = hf[p + f"mlp.{hf_name}.weight"]
        if is_linear(cfg, i):
            a = p + "linear_attn."
            qkv = hf[a + "in_proj_qkv.weight"]
            out[b + "attn_qkv.weight"] = torch.cat([qkv[:qk], reorder_v_heads(qkv[qk:], 0, cfg)])
            out[b + "attn_gate.weight"] = reorder_v_heads(hf[a + "in_proj_z.weight"], 0, cfg)
            out[b + "ssm_alpha.weight"] = reorder_v_heads(hf[a + "in_proj_a.weight"], 0, cfg)
            out[b + "ssm_beta.weight"] = reorder_v_heads(hf[a + "in_proj_b.weight"], 0, cfg)
            conv = hf[a + "conv1d.weight"].squeeze(1)
            conv = torch.cat([conv[:qk], reorder_v_heads(conv[qk:], 0, cfg)])
            out[b + "ssm_conv1d.weight"] = conv
            out[b + "ssm_a"] = reorder_v_heads(-torch.exp(hf[a + "A_log"]), 0, cfg)
            out[b + "ssm_dt.bias"] = reorder_v_heads(hf[a + "dt_bias"], 0, cfg)
            out[b + "ssm_norm.weight"] = hf[a + "norm.weight"]  # the gated norm: not +1
            out[b + "ssm_out.weight"] = reorder_v_heads(hf[a + "out_proj.weight"], 1, cfg)
        else:
            a = p + "self_attn."
            for hf_name, name in [("q_proj", "attn_q"), ("k_proj", "attn_k"),
                                  ("v_proj", "attn_v"), ("o_proj", "attn_output")]:
                out[b + name + ".weight"] = hf[a + f"{hf_name}.weight"]
            out[b + "attn_q_norm.weight"] = hf[a + "q_norm.weight"] + 1
            out[b + "attn_k_norm.weight"] = hf[a + "k_norm.weight"] + 1
    return out


def undo_converter(g, cfg, perturb):
    """The Hugging Face tensors the file was converted from (float64): norms minus 1 (except the
    gated norm), A_log = log(-ssm_a), conv1d back to [channels, 1, K], value heads back in
    grouped order."""
    s = cfg
    qk = 2 * s["k_heads"] * s["dk"]
    unreorder = ((lambda t, dim: t) if perturb == "v-heads-unreordered"
                 else (lambda t, dim: reorder_v_heads(t, dim, cfg, inverse=True)))
    hf = {"model.embed_tokens.weight": g["token_embd.weight"],
          "model.norm.weight": g["output_norm.weight"] - 1,
          "lm_head.weight": g.get("output.weight", g["token_embd.weight"])}
    for i in range(s["layers"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        hf[p + "input_layernorm.weight"] = g[b + "attn_norm.weight"] - 1
        hf[p + "post_attention_layernorm.weight"] = g[b + "post_attention_norm.weight"] - 1
        for hf_name, name in [("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"),
                              ("down_proj", "ffn_down")]:
            hf[p + f"mlp.{hf_name}.weight"] = g[b + name + ".weight"]
        if is_linear(cfg, i):
            a = p + "linear_attn."
            qkv = g[b + "attn_qkv.weight"]
            hf[a + "in_proj_qkv.weight"] = torch.cat([qkv[:qk], unreorder(qkv[qk:], 0)])
            hf[a + "in_proj_z.weight"] = unreorder(g[b + "attn_gate.weight"], 0)
            hf[a + "in_proj_a.weight"] = unreorder(g[b + "ssm_alpha.weight"], 0)
            hf[a + "in_proj_b.weight"] = unreorder(g[b + "ssm_beta.weight"], 0)
            conv = g[b + "ssm_conv1d.weight"]
            hf[a + "conv1d.weight"] = torch.cat([conv[:qk], unreorder(conv[qk:], 0)]).unsqueeze(1)
            hf[a + "A_log"] = torch.log(-unreorder(g[b + "ssm_a"], 0))
            hf[a + "dt_bias"] = unreorder(g[b + "ssm_dt.bias"], 0)
            hf[a + "norm.weight"] = g[b + "ssm_norm.weight"]
            hf[a + "out_proj.weight"] = unreorder(g[b + "ssm_out.weight"], 1)
        else:
            a = p + "self_attn."
            for hf_name, name in [("q_proj", "attn_q"), ("k_proj", "attn_k"),
                                  ("v_proj", "attn_v"), ("o_proj", "attn_output")]:
                hf[a + f"{hf_name}.weight"] = g[b + name + ".weight"]
            hf[a + "q_norm.weight"] = g[b + "attn_q_norm.weight"] - 1
            hf[a + "k_norm.weight"] = g[b + "attn_k_norm.weight"] - 1
    return hf


# A byte-level BPE vocabulary of 100 tokens as the converter writes Qwen's (tokenizer.ggml.model
# gpt2, pre-tokenizer qwen35): printable ASCII in GPT-2's byte-to-unicode spelling ("Ġ" for the
# space), the newline "Ċ", three merges and <|endoftext|> as eos. The test feeds token ids, so the
# vocabulary only has to load.
def vocabulary():
    tokens = ["Ġ" if c == 32 else chr(c) for c in range(32, 127)] + ["Ċ", "Ġt", "he", "in"]
    return tokens + ["<|endoftext|>"], ["Ġ t", "h e", "i n"]


def write_gguf(path, cfg, gguf_py):
    sys.path.insert(0, gguf_py)
    import gguf

    s = cfg
    w = gguf.GGUFWriter(path, "qwen35")
    w.add_name("qwen3.5 tiny random")
    w.add_block_count(s["layers"])
    w.add_context_length(64)
    w.add_embedding_length(s["hidden"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Qwen3NextModel.set_gguf_parameters and _Qwen35MRopeMixin.
    w.add_ssm_conv_kernel(s["conv"])
    w.add_ssm_state_size(s["dk"])
    w.add_ssm_group_count(s["k_heads"])
    w.add_ssm_time_step_rank(s["v_heads"])
    w.add_ssm_inner_size(s["dv"] * s["v_heads"])
    w.add_full_attention_interval(cfg["interval"])
    w.add_rope_dimension_count(int(s["head_dim"] * s["partial_rotary_factor"]))
    w.add_rope_dimension_sections(s["mrope_section"] + [0])
    tokens, merges = vocabulary()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * (len(tokens) - 1) + [gguf.TokenType.CONTROL])
    w.add_token_merges(merges)
    w.add_eos_token_id(len(tokens) - 1)
    w.add_bos_token_id(len(tokens) - 1)
    for name, t in convert(random_checkpoint(cfg), cfg).items():
        w.add_tensor(name, t.to(torch.float32).contiguous().numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def read_gguf(path, gguf_py):
    sys.path.insert(0, gguf_py)
    from gguf import GGUFReader, GGMLQuantizationType
    from gguf.quants import dequantize

    plain = (GGMLQuantizationType.F32, GGMLQuantizationType.F16)
    out = {}
    for t in GGUFReader(path).tensors:
        shape = list(reversed([int(n) for n in t.shape]))  # ggml's ne, outermost last
        # Quantized blocks: gguf-py's numpy dequantization, the values ggml's dequantize_row_* give.
        data = t.data if t.tensor_type in plain else dequantize(t.data, t.tensor_type)
        out[t.name] = torch.from_numpy(np.array(data, dtype=np.float64).reshape(shape))
    return out


# --- the forward, as transformers' Qwen3_5ForCausalLM computes it ---------------------------------

def rmsnorm_1p(x, w, eps):
    """Qwen3_5RMSNorm: zero-centred weight, x * rsqrt(mean(x^2) + eps) * (1 + w)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1 + w)


def l2norm(x, eps=1e-6):
    """modeling_qwen3_5.l2norm (as FLA): x * rsqrt(sum(x^2) + 1e-6), eps fixed, not rms_norm_eps."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def causal_conv1d_silu(x, w, perturb):
    """causal_conv1d_fn: a depthwise conv over time, left-padded by K-1 zeros (the window starts
    empty), no bias, then SiLU. x [T, channels], w [channels, 1, K]: out[t] = sum_j w[j] x[t-K+1+j],
    so the last tap weighs the current token."""
    if perturb == "conv-reversed":
        w = w.flip(-1)
    T, K = x.shape[0], w.shape[-1]
    out = F.conv1d(x.T[None], w, padding=K - 1, groups=x.shape[1])[0, :, :T]
    return F.silu(out.T)


def recurrent_gated_delta_rule(q, k, v, g, beta, detach_state=False):
    """torch_recurrent_gated_delta_rule, token by token. q, k [T, H, dk] (already L2-normalised
    and expanded to the value heads), v [T, H, dv], g and beta [T, H]. Per head the state S
    [dk, dv] starts at zero: S <- exp(g_t) S; S <- S + k_t (beta_t (v_t - S^T k_t))^T;
    o_t = S^T q_t, with q scaled by 1/sqrt(dk). detach_state (a planted mistake for the gradient
    check) cuts the gradient through the state from one step to the next."""
    T, H, dk = k.shape
    q = q / math.sqrt(dk)
    S = torch.zeros(H, dk, v.shape[-1])
    out = torch.zeros_like(v)
    for t in range(T):
        if detach_state:
            S = S.detach()
        S = S * g[t].exp()[:, None, None]
        kv_mem = (S * k[t][:, :, None]).sum(1)
        delta = (v[t] - kv_mem) * beta[t][:, None]
        S = S + k[t][:, :, None] * delta[:, None, :]
        out[t] = (S * q[t][:, :, None]).sum(1)
    return out


def gated_delta_net(h, W, a, cfg, perturb):
    s = cfg
    T = h.shape[0]
    key_dim = s["k_heads"] * s["dk"]
    mixed = causal_conv1d_silu(h @ W[a + "in_proj_qkv.weight"].T, W[a + "conv1d.weight"], perturb)
    q = mixed[:, :key_dim].reshape(T, s["k_heads"], s["dk"])
    k = mixed[:, key_dim:2 * key_dim].reshape(T, s["k_heads"], s["dk"])
    v = mixed[:, 2 * key_dim:].reshape(T, s["v_heads"], s["dv"])
    z = (h @ W[a + "in_proj_z.weight"].T).reshape(T, s["v_heads"], s["dv"])
    beta = torch.sigmoid(h @ W[a + "in_proj_b.weight"].T)
    sign = 1 if perturb == "decay-sign" else -1
    g = sign * W[a + "A_log"].exp() * F.softplus(h @ W[a + "in_proj_a.weight"].T + W[a + "dt_bias"])
    # Each key head serves v_heads / k_heads consecutive value heads (repeat_interleave);
    # kv-tiled (a planted mistake) has value head h read key head h % k_heads, as ggml does.
    r = s["v_heads"] // s["k_heads"]
    if perturb == "kv-tiled":
        q, k = l2norm(q).repeat(1, r, 1), l2norm(k).repeat(1, r, 1)
    else:
        q, k = l2norm(q).repeat_interleave(r, 1), l2norm(k).repeat_interleave(r, 1)
    o = recurrent_gated_delta_rule(q, k, v, g, beta, perturb == "state-detached")
    # Qwen3_5RMSNormGated: a plain weight (not 1 + w), then times silu(z).
    o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + s["eps"]) * W[a + "norm.weight"]
    o = o * F.silu(z)
    return o.reshape(T, -1) @ W[a + "out_proj.weight"].T


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def gated_attention(h, W, a, cfg, perturb):
    """Qwen3_5Attention. The text-only interleaved MRoPE gives the three sections (t, h, w) the
    same position, so it reduces to RoPE with rotate_half on the first
    head_dim * partial_rotary_factor dims of each head, inverse frequencies
    theta^(-2i / rotary_dim), the rest of the head passed through."""
    s = cfg
    T, H, KV, D = h.shape[0], s["heads"], s["kv_heads"], s["head_dim"]
    qg = h @ W[a + "q_proj.weight"].T
    if perturb == "gate-halves":
        q, gate = qg[:, :H * D].view(T, H, D), qg[:, H * D:]
    else:  # per head: D of query, then D of gate (torch.chunk of the head's 2D outputs)
        qg = qg.view(T, H, 2 * D)
        q, gate = qg[..., :D], qg[..., D:].reshape(T, H * D)
    q = rmsnorm_1p(q, W[a + "q_norm.weight"], s["eps"]).transpose(0, 1)
    k = (h @ W[a + "k_proj.weight"].T).view(T, KV, D)
    k = rmsnorm_1p(k, W[a + "k_norm.weight"], s["eps"]).transpose(0, 1)
    v = (h @ W[a + "v_proj.weight"].T).view(T, KV, D).transpose(0, 1)
    rd = D if perturb == "rope-full" else int(D * s["partial_rotary_factor"])
    inv_freq = 1.0 / (s["rope_theta"] ** (torch.arange(0, rd, 2) / rd))
    freqs = torch.arange(T)[:, None] * inv_freq
    cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()

    def rope(x):
        return torch.cat((x[..., :rd] * cos + rotate_half(x[..., :rd]) * sin, x[..., rd:]), -1)

    q, k = rope(q), rope(k)
    k, v = k.repeat_interleave(H // KV, 0), v.repeat_interleave(H // KV, 0)
    scores = (q @ k.transpose(-2, -1)) * D ** -0.5
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    o = (torch.softmax(scores.masked_fill(~causal, float("-inf")), -1) @ v)
    o = o.transpose(0, 1).reshape(T, H * D)
    if perturb != "no-gate":
        o = o * torch.sigmoid(gate)
    return o @ W[a + "o_proj.weight"].T


def reference_log_probs(W, cfg, tokens, perturb=None, positions=None):
    """log_softmax of the logits at each token [T, vocab]. With `positions` (each token's position
    in its example, graph/packing.h) the row is packed: every example, from one position 0 to the
    next, is evaluated alone (attention, conv window and recurrent state restart), which is what
    packing promises."""
    if positions is not None:
        starts = [t for t, p in enumerate(positions) if p == 0]
        if not starts or starts[0] != 0 or any(
                p not in (0, positions[t - 1] + 1) for t, p in enumerate(positions) if t):
            raise ValueError("positions must count 0, 1, 2, ... within each example")
        ends = starts[1:] + [len(tokens)]
        return torch.cat([reference_log_probs(W, cfg, tokens[a:b], perturb)
                          for a, b in zip(starts, ends)])
    s = cfg
    x = W["model.embed_tokens.weight"][tokens]
    for i in range(s["layers"]):
        p = f"model.layers.{i}."
        h = rmsnorm_1p(x, W[p + "input_layernorm.weight"], s["eps"])
        if is_linear(cfg, i):
            x = x + gated_delta_net(h, W, p + "linear_attn.", cfg, perturb)
        else:
            x = x + gated_attention(h, W, p + "self_attn.", cfg, perturb)
        h = rmsnorm_1p(x, W[p + "post_attention_layernorm.weight"], s["eps"])
        mlp = F.silu(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)
        x = x + mlp @ W[p + "mlp.down_proj.weight"].T
    x = rmsnorm_1p(x, W["model.norm.weight"], s["eps"])
    return torch.log_softmax(x @ W["lm_head.weight"].T, -1)


# --- the comparison -------------------------------------------------------------------------------

def llama_cpp_log_probs(tool, model, tokens):
    r = subprocess.run([tool, model] + [str(t) for t in tokens], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"{tool} failed: {r.stderr.strip()}")
    rows = [[float(v) for v in line.split()] for line in r.stdout.splitlines()]
    return torch.tensor(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logprobs", required=True, help="tests/tools' remat_llama_cpp_logprobs")
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--perturb", choices=PERTURBATIONS)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    gen = torch.Generator().manual_seed(5)
    vocab = SHAPE["vocab"]
    sequences = [torch.randint(0, vocab, (SEQ,), generator=gen).tolist() for _ in range(2)]
    failed = 0
    for name, cfg in VARIANTS.items():
        path = os.path.join(args.workdir, f"qwen35-{name}.gguf")
        write_gguf(path, cfg, args.gguf_py)
        W = undo_converter(read_gguf(path, args.gguf_py), cfg, args.perturb)
        got = [llama_cpp_log_probs(args.logprobs, path, tokens) for tokens in sequences]
        pairs = [(reference_log_probs(W, cfg, tokens, args.perturb), g)
                 for tokens, g in zip(sequences, got)]
        # A packed row: the first 12 tokens of one sequence, then the other from position 0,
        # against llama.cpp's log-probabilities of each alone (causal: a prefix's are the first
        # rows of the whole sequence's).
        packed = sequences[0][:12] + sequences[1]
        positions = list(range(12)) + list(range(SEQ))
        pairs.append((reference_log_probs(W, cfg, packed, args.perturb, positions),
                      torch.cat([got[0][:12], got[1]])))
        diffs, spread = [], math.inf
        for want, have in pairs:
            if have.shape != want.shape:
                raise RuntimeError(f"llama.cpp gave {tuple(have.shape)} log-probabilities, "
                                   f"the reference {tuple(want.shape)}")
            diffs.append((have - want).abs().max().item())
            spread = min(spread, (want.max(-1).values - want.min(-1).values).min().item())
        worst = math.nan if any(math.isnan(d) for d in diffs) else max(diffs)
        ok = worst <= TOLERANCE
        failed += not ok
        print(f"qwen35 {name}: max |log p difference| {worst:.3g} (tolerance {TOLERANCE}) over "
              f"2 sequences of {SEQ} tokens and a row packing 12 + {SEQ}, "
              f"{vocab} log-probabilities each, "
              f"spread per position >= {spread:.2f} nats{'' if ok else ': FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
