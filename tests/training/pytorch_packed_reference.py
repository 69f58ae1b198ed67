#!/usr/bin/python3
"""remat against PyTorch with packed rows: several examples to a row.

The odd-sized GPT of pytorch_reference.py (its weights, shapes, AdamW settings, tolerances and
comparison) trains 2 optimizer steps on rows that each hold several examples, through
remat::Session (remat_masked_training_app with "packed": true and each token's position in its
example), once under the policy none and once under every:1. The same steps run in float64
PyTorch with an explicit block-diagonal causal mask (a token attends only to earlier tokens of its
own example), positions that restart at 0 for every example (wpe[position]), and targets ignored
where an example ends, on untrained prompt tokens and on padding. The per-step losses, gradient
norms and every saved weight must match it, and the two policies must save the same bytes.

Two planted mistakes must each fail the same comparison, which shows it can see them: positions
not restarted (wpe[t] for the row position t), and attention across examples (a plain causal mask
over the whole row).

The untied Llama of pytorch_llama_reference.py (grouped-query attention, RoPE, SwiGLU) trains
the same way on the same rows, against its float64 model with the block-diagonal mask and RoPE
at each token's position in its example. Its planted mistake is attention across examples: RoPE
positions that do not restart would not show, since a rotation by a position shared by a whole
example cancels in every score of that example (that is why RoPE is relative).

Usage: pytorch_packed_reference.py --app PATH/TO/remat_masked_training_app --workdir DIR
Exit status 0 when every comparison passes, 1 on any mismatch or failure.
"""

import argparse
import json
import math
import os
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_llama_reference as lref  # noqa: E402  (the Llama family in float64)
import pytorch_reference as ref  # noqa: E402  (the model, file formats and comparison)

IGNORE = 0xFFFFFFFF  # remat's ignored target (base/ignore_target.h)
SEED = 20261126
# Examples of each step's rows, by their lengths in tokens; each row holds SEQ = 23 positions and
# an example of L tokens fills L - 1 of them (its last token is only a target). Rows end with
# padding or are full; one example fills a whole row; one has a single position.
ROWS = [[[6, 9, 8], [12, 2, 11], [24]],
        [[3, 4, 5, 6, 7], [20, 4], [9, 9]]]


def packed_rows(gen, rows, vocab=ref.VOCAB):
    """Tokens, positions and targets of one [BATCH, SEQ] micro-batch of packed examples, each
    example's first two targets untrained (a prompt). Returns (tokens, positions, remat targets
    with IGNORE, PyTorch targets with -100), tensors [BATCH, SEQ] but the remat targets."""
    tokens = torch.zeros(ref.BATCH, ref.SEQ, dtype=torch.long)
    positions = torch.zeros(ref.BATCH, ref.SEQ, dtype=torch.long)
    targets = torch.full((ref.BATCH, ref.SEQ), -100, dtype=torch.long)
    for b, lengths in enumerate(rows):
        t = 0
        for n in lengths:
            ids = torch.randint(0, vocab, (n,), generator=gen)
            for i in range(n - 1):
                tokens[b, t] = ids[i]
                positions[b, t] = i
                if i >= 2:
                    targets[b, t] = ids[i + 1]
                t += 1
        assert t <= ref.SEQ, f"row {b} overflows: {t} positions"
        for p in range(ref.SEQ - t):  # padding: positions restart at 0, nothing trained
            positions[b, t + p] = p
    remat_targets = [int(x) if x != -100 else IGNORE for x in targets.flatten().tolist()]
    return tokens, positions, remat_targets, targets


def attention(qkv, mask):
    """Multi-head attention with an explicit [B, T, T] mask (True: may attend)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // ref.HEADS
    q, k, v = qkv.split(C, dim=2)
    q = q.view(B, T, ref.HEADS, hs).transpose(1, 2)
    k = k.view(B, T, ref.HEADS, hs).transpose(1, 2)
    v = v.view(B, T, ref.HEADS, hs).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
    scores = scores.masked_fill(~mask[:, None, :, :], float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return y.transpose(1, 2).reshape(B, T, C)


def block_diagonal(positions):
    """Token t sees token s of its row iff t - positions[t] <= s <= t: its own example."""
    T = positions.shape[1]
    t = torch.arange(T)[None, :, None]
    s = torch.arange(T)[None, None, :]
    start = (torch.arange(T)[None, :] - positions)[:, :, None]
    return (s <= t) & (s >= start)


def gpt2_logits(P, tokens, positions, mistake):
    """pytorch_reference.gpt2_logits on packed rows; `mistake` plants one of the two errors."""
    B, T = tokens.shape
    mask = block_diagonal(positions)
    if mistake == "attention across examples":
        mask = torch.ones(T, T, dtype=torch.bool).tril().expand(B, T, T)
    rows = positions  # the wpe row of each token
    if mistake == "positions not restarted":
        rows = torch.arange(T).expand(B, T)
    x = P["wte.weight"][tokens] + P["wpe.weight"][rows]
    for i in range(ref.LAYERS):
        p = f"h.{i}."
        h = ref.layernorm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"])
        qkv = h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        x = x + attention(qkv, mask) @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"]
        h = ref.layernorm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"])
        h = ref.gelu_tanh(h @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"])
        x = x + h @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"]
    x = ref.layernorm(x, P["ln_f.weight"], P["ln_f.bias"])
    return (x @ P["wte.weight"].T).reshape(B * T, ref.VOCAB)


def llama_loss(P, tokens, positions, targets, mistake):
    """pytorch_llama_reference.llama_loss on packed rows (the untied variant)."""
    B, T = tokens.shape
    L = lref
    mask = block_diagonal(positions)
    if mistake == "attention across examples":
        mask = torch.ones(T, T, dtype=torch.bool).tril().expand(B, T, T)
    inv_freq = 1.0 / (L.THETA ** (torch.arange(0, L.head_dim(L.VARIANTS["llama_untied"]), 2, dtype=torch.float64) /
                                  L.head_dim(L.VARIANTS["llama_untied"])))
    freqs = positions.to(torch.float64)[:, :, None] * inv_freq  # [B, T, hd/2]
    emb = torch.cat((freqs, freqs), dim=-1)[:, None, :, :]  # [B, 1, T, hd]

    def attention(p, h):
        def proj(name, heads):
            y = h @ P[p + f"self_attn.{name}.weight"].T
            return y.view(B, T, heads, L.head_dim(L.VARIANTS["llama_untied"])).transpose(1, 2)

        def rope(x):
            return x * emb.cos() + L.rotate_half(x) * emb.sin()

        q, k = rope(proj("q_proj", L.HEADS)), rope(proj("k_proj", L.KV_HEADS))
        val = proj("v_proj", L.KV_HEADS)
        k = k.repeat_interleave(L.HEADS // L.KV_HEADS, dim=1)
        val = val.repeat_interleave(L.HEADS // L.KV_HEADS, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(L.head_dim(L.VARIANTS["llama_untied"]))
        y = torch.softmax(scores.masked_fill(~mask[:, None, :, :], float("-inf")), dim=-1) @ val
        return y.transpose(1, 2).reshape(B, T, -1) @ P[p + "self_attn.o_proj.weight"].T

    x = P["model.embed_tokens.weight"][tokens]
    for i in range(L.LAYERS):
        p = f"model.layers.{i}."
        x = x + attention(p, L.rmsnorm(x, P[p + "input_layernorm.weight"], L.RMS_EPS))
        h = L.rmsnorm(x, P[p + "post_attention_layernorm.weight"], L.RMS_EPS)
        gate = torch.nn.functional.silu(h @ P[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ P[p + "mlp.up_proj.weight"].T)) @ P[p + "mlp.down_proj.weight"].T
    x = L.rmsnorm(x, P["model.norm.weight"], L.RMS_EPS)
    logits = (x @ P["lm_head.weight"].T).reshape(B * T, L.VOCAB)
    return torch.nn.functional.cross_entropy(logits, targets.reshape(-1))


def gpt2_loss(P, tokens, positions, targets, mistake):
    return torch.nn.functional.cross_entropy(gpt2_logits(P, tokens, positions, mistake),
                                             targets.reshape(-1))


def reference_run(start, steps, mistake=None, loss_fn=gpt2_loss, clip=ref.CLIP):
    """2 float64 AdamW steps on the packed micro-batches, as pytorch_reference.reference_run."""
    params = {n: w.to(torch.float64).clone().requires_grad_(True) for n, w in start.items()}
    decay = [p for p in params.values() if p.dim() == 2]
    no_decay = [p for p in params.values() if p.dim() != 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": ref.WD}, {"params": no_decay, "weight_decay": 0.0}],
        lr=ref.LR, betas=ref.BETAS, eps=ref.EPS)
    losses, norms, grads = [], [], []
    for tokens, positions, _, targets in steps:
        opt.zero_grad()
        loss = loss_fn(params, tokens, positions, targets, mistake)  # mean over trained targets
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm=clip)))
        grads.append({n: p.grad.detach().clone() for n, p in params.items()})
        opt.step()
        losses.append(loss.item())
    return losses, norms, {n: p.detach() for n, p in params.items()}, grads


def remat_run(app, workdir, name, weights, steps, policy, model=None):
    out = os.path.join(workdir, f"{name}.safetensors")
    if os.path.exists(out):
        os.remove(out)
    config = {"layers": ref.LAYERS, "dim": ref.DIM, "heads": ref.HEADS, "vocab": ref.VOCAB,
              "ctx": ref.CTX, "batch": ref.BATCH, "seq": ref.SEQ, "accum": 1, "lr": ref.LR,
              "wd": ref.WD, "beta1": ref.BETAS[0], "beta2": ref.BETAS[1], "eps": ref.EPS,
              "grad_clip": ref.CLIP, "init": weights, "save": out, "policy": policy,
              "packed": True, **(model or {}),
              "steps": [{"tokens": tokens.flatten().tolist(), "targets": targets,
                         "positions": positions.flatten().tolist()}
                        for tokens, positions, targets, _ in steps]}
    path = os.path.join(workdir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(config, f)
    lines = [json.loads(l) for l in ref.run([app, path]).splitlines() if l.strip()]
    logged = [l for l in lines if "loss" in l]
    return ([l["loss"] for l in logged], [l["grad_norm"] for l in logged],
            ref.read_safetensors(out), lines[-1])


class QuietChecks(ref.Checks):
    """Counts like Checks without printing: for the comparisons that must fail."""

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def check_llama(checks, args, gen):
    """The untied Llama on packed rows of its vocabulary, under none and every:1."""
    v = lref.VARIANTS["llama_untied"]
    start = lref.initial_weights(v)
    weights = os.path.join(args.workdir, "llama_init.safetensors")
    ref.write_safetensors(weights, [(n, start[n]) for n, _ in lref.parameter_shapes(v)], {})
    steps = [packed_rows(gen, rows, lref.VOCAB) for rows in ROWS]
    clip = 1e6  # no clipping: the norms are compared as logged, before clipping
    model = {"arch": "llama", "layers": lref.LAYERS, "dim": lref.DIM, "heads": lref.HEADS,
             "kv_heads": lref.KV_HEADS, "ffn": lref.FFN, "vocab": lref.VOCAB, "ctx": lref.CTX,
             "tied": False, "grad_clip": clip}
    want = reference_run(start, steps, None, llama_loss, clip)
    wrong_ref = reference_run(start, steps, "attention across examples", llama_loss, clip)
    saved_by_run = []
    for policy in ("none", "every:1"):
        label = f"packed llama, {policy}"
        got = remat_run(args.app, args.workdir, "packed_llama_" + policy.replace(":", "_"),
                        weights, steps, policy, model)
        losses, norms, saved, summary = got
        ref.compare(checks, label, losses, norms, saved, summary, *want, start)
        wrong = QuietChecks()
        ref.compare(wrong, f"{label}, against attention across examples (must fail)", losses,
                    norms, saved, summary, *wrong_ref, start)
        checks.check(wrong.failed > 0, f"{label}: remat also matches a reference with attention "
                     "across examples: the comparison cannot see that mistake")
        print(f"{label}: {wrong.failed} of {wrong.passed + wrong.failed} checks fail against a "
              "reference with attention across examples, as they must")
        saved_by_run.append(saved)
    checks.check(all(torch.equal(saved_by_run[0][n], saved_by_run[1][n]) for n in want[2]),
                 "the packed llama's none and every:1 runs saved different weights")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", required=True, help="path of remat_masked_training_app")
    ap.add_argument("--workdir", required=True, help="directory for the weights and configs")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    start = ref.initial_weights()
    weights = os.path.join(args.workdir, "init.safetensors")
    ref.write_safetensors(weights, [(n, start[n]) for n, _ in ref.parameter_shapes()],
                          {"n_head": str(ref.HEADS)})
    gen = torch.Generator().manual_seed(SEED)
    steps = [packed_rows(gen, rows) for rows in ROWS]
    ref_losses, ref_norms, ref_weights, ref_grads = reference_run(start, steps)

    checks = ref.Checks()
    saved_by_run = []
    for policy in ("none", "every:1"):
        label = f"packed, {policy}"
        losses, norms, saved, summary = remat_run(args.app, args.workdir,
                                                  "packed_" + policy.replace(":", "_"), weights,
                                                  steps, policy)
        ref.compare(checks, label, losses, norms, saved, summary, ref_losses, ref_norms,
                    ref_weights, ref_grads, start)
        for mistake in ("positions not restarted", "attention across examples"):
            m_losses, m_norms, m_weights, m_grads = reference_run(start, steps, mistake)
            wrong = QuietChecks()
            ref.compare(wrong, f"{label}, against {mistake} (must fail)", losses, norms, saved,
                        summary, m_losses, m_norms, m_weights, m_grads, start)
            checks.check(wrong.failed > 0, f"{label}: remat also matches a reference with "
                         f"{mistake}: the comparison cannot see that mistake")
            print(f"{label}: {wrong.failed} of {wrong.passed + wrong.failed} checks fail against "
                  f"a reference with {mistake}, as they must")
        saved_by_run.append(saved)
    checks.check(all(torch.equal(saved_by_run[0][n], saved_by_run[1][n]) for n in ref_weights),
                 "the none and every:1 runs saved different weights")
    print(f"PyTorch float64 losses: {', '.join(f'{l:.6f}' for l in ref_losses)}; gradient norms: "
          f"{', '.join(f'{n:.6f}' for n in ref_norms)}")
    check_llama(checks, args, gen)
    print(f"pytorch packed comparison: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed run or an unreadable file: one clear message
        print(f"pytorch packed comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
