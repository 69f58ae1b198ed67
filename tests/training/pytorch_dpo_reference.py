#!/usr/bin/python3
"""DPO and KTO in float64 PyTorch: the whole-model reference for remat's preference training.

The odd-sized GPT-2 of pytorch_reference.py and a Llama-family model of
pytorch_llama_reference.py (a Qwen2 with q/k/v biases and a tied head), with a vocabulary of the
256 bytes and <|endoftext|> (id 256), each trained two AdamW steps on preference data, fully and
with LoRA adapters (rank 3, B not zero, so the policy differs from the reference from the first
step). The rows are those formats/preference_rows.h builds for a byte-level tokenizer without a
chat template (prompt bytes untrained, answer bytes and the eos token trained):

  DPO (Rafailov et al. 2023, arXiv:2305.18290; TRL's loss_type "sigmoid" with label smoothing):
      batch s of B pairs takes pairs sB..sB+B-1 modulo their count, rows chosen then rejected;
      loss = mean over pairs of -(1-e) log s(b z) - e log s(-b z),
      z = (pi_c - ref_c) - (pi_r - ref_r), each log-prob summed over the answer's trained tokens.
  KTO (Ethayarajh et al. 2024, arXiv:2402.01306; TRL's KTOTrainer): B labelled rows and B KL
      rows (prompt b with the answer of example b-1 of the batch); kl = max(0, mean(pi_KL -
      ref_KL)), detached; desirable examples lose w_d (1 - s(b(r - kl))), undesirable ones
      w_u (1 - s(b(kl - r))), r = pi - ref; the loss is the mean over the B examples.

The reference model is the initial weights, frozen (full fine-tuning), or the base with the
adapters off (LoRA); its log-probs are computed from it once per example.

It checks itself, with no remat needed:
  - every gradient against a five-point finite difference of the whole-model loss along a random
    direction (KTO's reference point held, as TRL detaches it);
  - the gradient as remat's runtime forms it: sum over rows of c_r * grad(row's summed answer
    log-prob), with c_r = dL/d(log-prob) in closed form (graph/preference_loss.h), against
    autograd's gradient of the loss;
  - at step 1 of full fine-tuning the policy is the reference: DPO's loss is log 2 and every
    reward 0; under LoRA with B != 0 it is not.
With --remat it also trains each model with `remat train --objective dpo|kto` under the policies
every:1 and none, repeats the run in the reference from remat's own start (for LoRA: remat's
random A, B zero, so the policy starts as the reference), and compares the rows
(`remat tokenize --jsonl`), per-step losses, gradient norms and TRL's metrics, and the saved
weights or adapters, with the tolerances of pytorch_reference.py; both policies must save the
same bits. Each runs a third time as B micro-batches of one example (--accum), against the same
whole-batch reference (KTO's KL rows and reference point are the whole batch's).

Usage: pytorch_dpo_reference.py --workdir DIR [--remat PATH/TO/remat] [--runs NAME,...]
       [--perturb NAME]
--perturb plants a mistake (see PERTURBATIONS): the self-checks or the comparison must then fail.
Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_reference as ref  # noqa: E402  (GPT-2, safetensors, comparison)
import pytorch_llama_reference as llama  # noqa: E402  (the Llama family)

EOS = 256
VOCAB = 257  # the 256 bytes and <|endoftext|>
ref.VOCAB = VOCAB  # GPT-2's shapes and logits read the module's vocabulary
BATCH, SEQ, STEPS = 3, 23, 2
ref.STEPS = STEPS  # ref.compare() checks this many steps
LR, WD, BETAS, EPS = 1e-3, 0.1, (0.9, 0.999), 1e-8
DPO = {"beta": 0.2, "label_smoothing": 0.1}
KTO = {"beta": 0.2, "desirable_weight": 1.0, "undesirable_weight": 1.5}
RANK, ALPHA = 3, 5.0
SCALE = ALPHA / RANK
SEED = 20261128
LLAMA_VARIANT = llama.VARIANTS["qwen2_tied_qkv_bias"]
# Finite differences: the five-point stencil with h = 1e-4 along a random unit direction errs by
# about h^4 |L^(5)| / 30 (~1e-16 here) plus rounding ~2e-16 |L| / h (~1e-12); the directional
# derivatives are ~1e-3..1e-2 (gradient norms 0.3..8 over 1e4..1e5 parameters), so 1e-6
# relative is far above both and far below any real error (a missing term moves it by percent).
FD_STEP, FD_RTOL = 1e-4, 1e-6
# The coefficient form and autograd sum the same float64 terms in another order: 1e-10 relative.
COEFF_RTOL = 1e-10

# Pairs: (prompt, chosen, rejected). 4 pairs for batches of 3, so step 2 wraps (pairs 3, 0, 1);
# prompts of different lengths, so rows end at different places.
PAIRS = [
    ("Q: 2+2? A:", " 4", " 5"),
    ("Sky colour:", " blue", " green"),
    ("Hi", " there!", " go away"),
    ("Best tool: ", "a spade", "a hammer?"),
]
# Labelled examples: (prompt, completion, desirable).
FEEDBACK = [
    ("Q: 2+2? A:", " 4", True),
    ("Sky colour:", " green", False),
    ("Hi", " there!", True),
    ("Best tool: ", "a hammer?", False),
    ("Say yes:", " no", False),
]
PERTURBATIONS = {
    "coefficients": "the closed-form DPO coefficient of rejected rows has the wrong sign",
    "kto-coefficients": "the closed-form KTO coefficient of undesirable rows has the wrong sign",
    "reference": "the LoRA reference keeps the adapters on",
    "kl-rows": "KL row b takes the answer of example b + 1 of the batch, not b - 1 (remat must "
               "then disagree)",
}
PERTURB = None


# ---------------------------------------------------------------------------------------------
# Rows, as formats/preference_rows.h builds them for a byte tokenizer without a chat template.
# ---------------------------------------------------------------------------------------------
def example(prompt, answer):
    """ids and mask of prompt + answer + eos: the SFT {"prompt", "completion"} row."""
    p, a = list(prompt.encode()), list(answer.encode())
    ids = p + a + [EOS]
    assert len(ids) <= SEQ + 1, "every example fits a row: none is cut or dropped"
    return ids, [0] * len(p) + [1] * (len(a) + 1)


def kl_example(prompt_of, answer_of):
    """The prompt of one row (before its first trained token) and the answer of another."""
    p, a = prompt_of[1].index(1), answer_of[1].index(1)
    return prompt_of[0][:p] + answer_of[0][a:], prompt_of[1][:p] + answer_of[1][a:]


def fill(rows):
    """[R, T] tokens (pad 0) and targets (-100 where untrained), as fill_example_row fills."""
    tokens = torch.zeros(len(rows), SEQ, dtype=torch.long)
    targets = torch.full((len(rows), SEQ), -100, dtype=torch.long)
    for r, (ids, mask) in enumerate(rows):
        for t in range(min(len(ids), SEQ)):
            tokens[r, t] = ids[t]
            if t + 1 < len(ids) and mask[t + 1]:
                targets[r, t] = ids[t + 1]
    return tokens, targets


def dpo_batch(step):
    pairs = [PAIRS[(step * BATCH + b) % len(PAIRS)] for b in range(BATCH)]
    rows = [example(p, c) for p, c, _ in pairs] + [example(p, r) for p, _, r in pairs]
    return fill(rows), None


def kto_batch(step):
    chosen = [FEEDBACK[(step * BATCH + b) % len(FEEDBACK)] for b in range(BATCH)]
    rows = [example(p, c) for p, c, _ in chosen]
    shift = 1 if PERTURB == "kl-rows" else -1
    kl = [kl_example(rows[b], rows[(b + shift) % BATCH]) for b in range(BATCH)]
    return fill(rows + kl), torch.tensor([d for _, _, d in chosen])


# ---------------------------------------------------------------------------------------------
# Models: logits [R*T, V] from named float64 parameters.
# ---------------------------------------------------------------------------------------------
def llama_logits(P, tokens):
    v, eps = LLAMA_VARIANT, llama.RMS_EPS
    x = P["model.embed_tokens.weight"][tokens]
    for i in range(llama.LAYERS):
        p = f"model.layers.{i}."
        x = x + llama.attention(P, p, llama.rmsnorm(x, P[p + "input_layernorm.weight"], eps), v, eps)
        h = llama.rmsnorm(x, P[p + "post_attention_layernorm.weight"], eps)
        gate = torch.nn.functional.silu(h @ P[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ P[p + "mlp.up_proj.weight"].T)) @ P[p + "mlp.down_proj.weight"].T
    x = llama.rmsnorm(x, P["model.norm.weight"], eps)
    head = P["model.embed_tokens.weight" if v["tied"] else "lm_head.weight"]
    return (x @ head.T).reshape(-1, VOCAB)


def gpt2_model():
    modules = [f"h.{i}.{m}" for i in range(ref.LAYERS) for m in ("attn.c_attn", "attn.c_proj",
                                                                  "mlp.c_proj")]
    return {"name": "gpt2", "shapes": ref.parameter_shapes(), "start": ref.initial_weights(),
            "logits": ref.gpt2_logits, "modules": modules, "targets": ["c_attn", "c_proj"],
            "peft_prefix": "base_model.model.transformer.", "fan_in_fan_out": True}


def llama_model():
    llama.VOCAB = VOCAB
    modules = [f"model.layers.{i}.self_attn.{m}" for i in range(llama.LAYERS)
               for m in ("q_proj", "v_proj")]
    return {"name": "qwen2", "shapes": llama.parameter_shapes(LLAMA_VARIANT),
            "start": llama.initial_weights(LLAMA_VARIANT), "logits": llama_logits,
            "modules": modules, "targets": ["q_proj", "v_proj"], "peft_prefix": "base_model.model.",
            "fan_in_fan_out": False}


def initial_adapter(model):
    """PEFT's A (uniform in +-1/sqrt(in)) and a small random B, rounded to float32."""
    gen = torch.Generator().manual_seed(SEED)
    adapter = {}
    for m in model["modules"]:
        w = model["start"][m + ".weight"]
        fan_in, fan_out = (w.shape[0], w.shape[1]) if model["fan_in_fan_out"] else \
            (w.shape[1], w.shape[0])
        a = (torch.rand(RANK, fan_in, generator=gen, dtype=torch.float64) * 2 - 1) / math.sqrt(fan_in)
        b = torch.randn(fan_out, RANK, generator=gen, dtype=torch.float64) * 0.05
        adapter[model["peft_prefix"] + m + ".lora_A.weight"] = a.to(torch.float32)
        adapter[model["peft_prefix"] + m + ".lora_B.weight"] = b.to(torch.float32)
    return adapter


def adapted(model, P, L):
    """The weights W + scale·BA (transposed for GPT-2's Conv1D): LoRA's forward, exactly."""
    out = dict(P)
    for m in model["modules"]:
        delta = L[model["peft_prefix"] + m + ".lora_B.weight"] @ \
            L[model["peft_prefix"] + m + ".lora_A.weight"]
        out[m + ".weight"] = P[m + ".weight"] + SCALE * (delta.T if model["fan_in_fan_out"] else delta)
    return out


def sequence_logps(model, P, tokens, targets):
    """Per row: the sum of log p(target) over its trained targets."""
    logp = torch.log_softmax(model["logits"](P, tokens), dim=-1)
    flat = targets.reshape(-1)
    picked = logp.gather(1, flat.clamp(min=0).unsqueeze(1)).squeeze(1)
    return torch.where(flat >= 0, picked, torch.zeros_like(picked)).reshape(tokens.shape).sum(1)


# ---------------------------------------------------------------------------------------------
# The losses, their closed-form row coefficients (graph/preference_loss.h) and TRL's metrics.
# ---------------------------------------------------------------------------------------------
def dpo(policy, reference, kl_fixed=None):
    b, e = DPO["beta"], DPO["label_smoothing"]
    pc, pr = policy[:BATCH], policy[BATCH:]
    rc, rr = reference[:BATCH], reference[BATCH:]
    z = (pc - rc) - (pr - rr)
    F = torch.nn.functional
    loss = (-(1 - e) * F.logsigmoid(b * z) - e * F.logsigmoid(-b * z)).mean()
    zd = z.detach()
    dz = (-(1 - e) * torch.sigmoid(-b * zd) + e * torch.sigmoid(b * zd)) * b / BATCH
    coefficients = torch.cat((dz, dz if PERTURB == "coefficients" else -dz))
    cr, rj = b * (pc - rc).detach(), b * (pr - rr).detach()
    metrics = {"rewards/chosen": cr.mean(), "rewards/rejected": rj.mean(),
               "rewards/accuracies": (cr > rj).double().mean(), "rewards/margins": (cr - rj).mean(),
               "logps/chosen": pc.detach().mean(), "logps/rejected": pr.detach().mean()}
    return loss, coefficients, {k: float(v) for k, v in metrics.items()}


def kto(policy, reference, desirable, kl_fixed=None):
    b = KTO["beta"]
    p, r = policy[:BATCH], reference[:BATCH]
    kl = (policy[BATCH:] - reference[BATCH:]).mean().clamp(min=0).detach()
    if kl_fixed is not None:
        kl = kl_fixed
    ratio = p - r
    ones = torch.ones(BATCH, dtype=torch.float64)
    sign = torch.where(desirable, ones, -ones)
    weight = torch.where(desirable, KTO["desirable_weight"] * ones, KTO["undesirable_weight"] * ones)
    x = sign * b * (ratio - kl)
    loss = (weight * (1 - torch.sigmoid(x))).mean()
    xd = x.detach()
    c_sign = ones if PERTURB == "kto-coefficients" else sign
    c = -weight * torch.sigmoid(xd) * torch.sigmoid(-xd) * c_sign * b / BATCH
    coefficients = torch.cat((c, torch.zeros(BATCH, dtype=torch.float64)))
    rewards = b * ratio.detach()
    metrics = {"kl": float(kl)}
    for kind, mask in (("chosen", desirable), ("rejected", ~desirable)):
        if mask.any():
            metrics[f"rewards/{kind}"] = float(rewards[mask].mean())
            metrics[f"logps/{kind}"] = float(p.detach()[mask].mean())
    if desirable.any() and (~desirable).any():
        metrics["rewards/margins"] = metrics["rewards/chosen"] - metrics["rewards/rejected"]
    return loss, coefficients, metrics, kl


# ---------------------------------------------------------------------------------------------
# One run: two AdamW steps, with the self-checks on each step's gradient.
# ---------------------------------------------------------------------------------------------
class Run:
    def __init__(self, model, objective, lora, adapter=None):
        """adapter: LoRA's start (default: initial_adapter's, B not zero)."""
        self.model, self.objective, self.lora = model, objective, lora
        self.base = {n: w.to(torch.float64) for n, w in model["start"].items()}
        self.adapter = (adapter or initial_adapter(model)) if lora else None
        # The policy starts as the reference unless LoRA's B starts away from zero.
        self.starts_at_reference = not lora or all(
            not bool(w.any()) for n, w in self.adapter.items() if "lora_B" in n)
        start = self.adapter if lora else model["start"]
        self.trained = {n: w.to(torch.float64).clone().requires_grad_(True) for n, w in start.items()}
        self.label = f"{model['name']} {objective} {'lora' if lora else 'full'}"

    def weights(self, trained):
        return adapted(self.model, self.base, trained) if self.lora else trained

    def reference_logps(self, tokens, targets):
        """The frozen initial model (full), or the base with the adapters off (LoRA)."""
        with torch.no_grad():
            if self.lora and PERTURB == "reference":
                return sequence_logps(self.model, adapted(self.model, self.base, self.trained),
                                      tokens, targets)
            return sequence_logps(self.model, self.base, tokens, targets)

    def loss(self, trained, batch, reference, kl_fixed=None):
        (tokens, targets), desirable = batch
        policy = sequence_logps(self.model, self.weights(trained), tokens, targets)
        if self.objective == "dpo":
            loss, coefficients, metrics = dpo(policy, reference)
            return loss, coefficients, metrics, policy, None
        loss, coefficients, metrics, kl = kto(policy, reference, desirable, kl_fixed)
        return loss, coefficients, metrics, policy, kl

    def check_gradient(self, checks, step, batch, reference, grads):
        loss, coefficients, _, policy, kl = self.loss(self.trained, batch, reference)
        # remat's form: the rows' summed log-prob gradients weighted by the closed-form
        # coefficients.
        rows = torch.autograd.grad((coefficients * policy).sum(), list(self.trained.values()))
        num = sum(float((g - grads[n]).pow(2).sum()) for g, n in zip(rows, self.trained))
        den = sum(float(g.pow(2).sum()) for g in grads.values())
        rel = math.sqrt(num / den)
        checks.check(rel <= COEFF_RTOL, f"{self.label}: step {step + 1}: the row coefficients give "
                     f"a gradient {rel:.2e} off autograd's (tolerance {COEFF_RTOL:g})")
        # A five-point difference along a random direction, the reference point held.
        gen = torch.Generator().manual_seed(SEED + step)
        direction = {n: torch.randn(p.shape, generator=gen, dtype=torch.float64)
                     for n, p in self.trained.items()}
        norm = math.sqrt(sum(float(d.pow(2).sum()) for d in direction.values()))
        with torch.no_grad():
            f = {s: float(self.loss({n: p + s * FD_STEP * direction[n] / norm
                                     for n, p in self.trained.items()}, batch, reference, kl)[0])
                 for s in (2, 1, -1, -2)}
        fd = (-f[2] + 8 * f[1] - 8 * f[-1] + f[-2]) / (12 * FD_STEP) * norm
        exact = sum(float((grads[n] * direction[n]).sum()) for n in self.trained)
        err = abs(fd - exact) / abs(exact)
        checks.check(err <= FD_RTOL, f"{self.label}: step {step + 1}: directional derivative "
                     f"{exact:.9g}, finite difference {fd:.9g} (relative {err:.2e} > {FD_RTOL:g})")
        return rel, err

    def train(self, checks):
        params = self.trained
        if self.lora:
            opt = torch.optim.AdamW(list(params.values()), lr=LR, betas=BETAS, eps=EPS,
                                    weight_decay=WD)
        else:
            opt = torch.optim.AdamW(
                [{"params": [p for p in params.values() if p.dim() == 2], "weight_decay": WD},
                 {"params": [p for p in params.values() if p.dim() != 2], "weight_decay": 0.0}],
                lr=LR, betas=BETAS, eps=EPS)
        make = dpo_batch if self.objective == "dpo" else kto_batch
        losses, norms, grads_by_step, metrics_by_step, worst = [], [], [], [], [0.0, 0.0]
        for step in range(STEPS):
            batch = make(step)
            reference = self.reference_logps(*batch[0])
            opt.zero_grad()
            loss, _, metrics, _, _ = self.loss(params, batch, reference)
            loss.backward()
            grads = {n: p.grad.detach().clone() for n, p in params.items()}
            norms.append(math.sqrt(sum(float(g.pow(2).sum()) for g in grads.values())))
            rel, err = self.check_gradient(checks, step, batch, reference, grads)
            worst = [max(worst[0], rel), max(worst[1], err)]
            if step == 0 and self.objective == "dpo":
                at_start = abs(loss.item() - math.log(2)) <= 1e-15
                want = self.starts_at_reference
                checks.check(at_start == want, f"{self.label}: step 1 loss {loss.item():.17g} "
                             f"{'is' if at_start else 'is not'} log 2: the policy should "
                             f"{'be' if want else 'differ from'} the reference")
            opt.step()
            losses.append(loss.item())
            grads_by_step.append(grads)
            metrics_by_step.append(metrics)
        self.losses, self.norms, self.grads, self.metrics = losses, norms, grads_by_step, metrics_by_step
        self.final = {n: p.detach() for n, p in params.items()}
        print(f"{self.label}: losses {', '.join(f'{l:.9f}' for l in losses)}; gradient norms "
              f"{', '.join(f'{n:.6g}' for n in norms)}; coefficient form within {worst[0]:.1e} of "
              f"autograd, finite differences within {worst[1]:.1e}; step 2 metrics "
              + ", ".join(f"{k} {v:.6g}" for k, v in metrics_by_step[-1].items()))


# ---------------------------------------------------------------------------------------------
# The remat comparison (needs `remat train --objective`).
# ---------------------------------------------------------------------------------------------
def byte_symbol(b):
    """GPT-2's printable stand-in for byte b (tests/api/tiny_tokenizer.h)."""
    def printable(c):
        return ord("!") <= c <= ord("~") or 0xA1 <= c <= 0xAC or 0xAE <= c <= 0xFF
    if printable(b):
        return chr(b)
    return chr(256 + sum(1 for c in range(b) if not printable(c)))


def write_tokenizer(directory):
    """vocab.json with id = byte value and <|endoftext|> = 256, no merges: one token a byte."""
    os.makedirs(directory, exist_ok=True)
    vocab = {byte_symbol(b): b for b in range(256)}
    vocab["<|endoftext|>"] = EOS
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(directory, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")


def write_data(path, objective):
    with open(path, "w", encoding="utf-8") as f:
        if objective == "dpo":
            for p, c, r in PAIRS:
                f.write(json.dumps({"prompt": p, "chosen": c, "rejected": r}) + "\n")
        else:
            for p, c, d in FEEDBACK:
                f.write(json.dumps({"prompt": p, "completion": c, "label": d}) + "\n")


def check_rows(checks, remat, d, tokenizer):
    """remat's SFT rows of each prompt and answer (`remat tokenize --jsonl`) are the reference's."""
    answers = [(p, c) for p, c, _ in PAIRS] + [(p, r) for p, _, r in PAIRS] + \
        [(p, c) for p, c, _ in FEEDBACK]
    sft = os.path.join(d, "sft.jsonl")
    with open(sft, "w", encoding="utf-8") as f:
        for p, a in answers:
            f.write(json.dumps({"prompt": p, "completion": a}) + "\n")
    rows = [json.loads(l) for l in ref.run([remat, "tokenize", "--tokenizer", tokenizer, "--jsonl",
                                            sft]).splitlines() if l.strip()]
    want = [dict(zip(("ids", "mask"), example(p, a))) for p, a in answers]
    checks.check(rows == want, f"remat tokenize --jsonl gives rows {rows}, the reference {want}")


def lora_flags(model):
    return ["--lora", str(RANK), "--lora-alpha", str(ALPHA), "--lora-targets",
            ",".join(model["targets"])]


def remat_initial_adapter(remat, d, model, init, tokenizer):
    """The adapter remat starts from (A random from --seed, B zero), saved after one SFT step at
    a learning rate of 1e-30 (remat refuses 0): AdamW moves each element by at most ~1e-30,
    which leaves A's float32 values as they were and B within 1e-29 of zero, where it is set
    back. The reference trains from the same start."""
    out = os.path.join(d, "lora_start")
    ref.run([remat, "train", "--init", init, "--tokenizer", tokenizer, "--data",
             os.path.join(d, "sft.jsonl"), "--batch", "1", "--seq", str(SEQ), "--steps", "1",
             "--lr", "1e-30", *lora_flags(model), "--save-adapter", out, "--quiet"])
    saved = ref.read_safetensors(os.path.join(out, "adapter_model.safetensors"))
    for n, w in saved.items():
        if "lora_B" in n:
            assert float(w.abs().max()) <= 1e-29, f"{n} did not start at zero"
            saved[n] = torch.zeros_like(w)
    return {n: w.to(torch.float32) for n, w in saved.items()}


def remat_compare(checks, remat, workdir, name, model, objective, lora):
    """Trains `name` with remat and compares it with a reference run from remat's own start."""
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    tokenizer, data = os.path.join(d, "tokenizer"), os.path.join(d, "data.jsonl")
    write_tokenizer(tokenizer)
    write_data(data, objective)
    check_rows(checks, remat, d, tokenizer)
    if model["name"] == "gpt2":
        init = os.path.join(d, "init.safetensors")
        ref.write_safetensors(init, [(n, model["start"][n]) for n, _ in model["shapes"]],
                              {"n_head": str(ref.HEADS)})
    else:
        init = os.path.join(d, "init")
        llama.write_folder(init, LLAMA_VARIANT, model["start"])
    run = Run(model, objective, lora,
              remat_initial_adapter(remat, d, model, init, tokenizer) if lora else None)
    run.label += " (remat's start)"
    run.train(checks)
    options = DPO if run.objective == "dpo" else KTO
    flags = [f"--{k.replace('_', '-')}" for k in options]
    cmd = [remat, "train", "--init", init, "--tokenizer", tokenizer, "--data", data,
           "--objective", run.objective, "--seq", str(SEQ), "--steps",
           str(STEPS), "--lr", str(LR), "--wd", str(WD), "--beta1", str(BETAS[0]), "--beta2",
           str(BETAS[1]), "--eps", str(EPS), "--quiet"]
    for flag, value in zip(flags, options.values()):
        cmd += [flag, str(value)]
    # Two plans of one batch of B examples, and B micro-batches of one example, whose
    # accumulated gradient is the whole batch's (a mean over the examples; KTO's KL rows pair
    # within the whole batch and its reference point is estimated over all of them).
    configs = [("every:1", ["--batch", str(BATCH)]), ("none", ["--batch", str(BATCH)]),
               ("every:1 accum", ["--batch", "1", "--accum", str(BATCH)])]
    saved_by_policy = []
    for policy, batch in configs:
        tag = policy.replace(":", "_").replace(" ", "_")
        log = os.path.join(d, f"{tag}.json")
        out = os.path.join(d, f"{tag}_out")
        extra = ["--policy", policy.split()[0], *batch, "--log-json", log]
        if run.lora:
            extra += [*lora_flags(model), "--save-adapter", out]
        else:
            extra += ["--save", out + (".safetensors" if model["name"] == "gpt2" else "")]
        ref.run(cmd + extra)
        with open(log) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        steps = [l for l in lines if "step" in l and "loss" in l and not l.get("summary")]
        for s, line in enumerate(steps[:STEPS]):
            for name, want in run.metrics[s].items():
                got = line.get(name)
                ok = got is not None and abs(got - want) <= ref.LOSS_RTOL * (1 + abs(want))
                checks.check(ok, f"{run.label} {policy}: step {s + 1} {name} {got}, PyTorch {want:.9g}")
        if run.lora:
            saved = ref.read_safetensors(os.path.join(out, "adapter_model.safetensors"))
            start = run.adapter
        elif model["name"] == "gpt2":
            saved = ref.read_safetensors(out + ".safetensors")
            start = model["start"]
        else:
            saved = {}
            for file in sorted(os.listdir(out)):
                if file.endswith(".safetensors"):
                    saved.update(ref.read_safetensors(os.path.join(out, file)))
            start = model["start"]
        ref.compare(checks, f"{run.label} {policy}", [l["loss"] for l in steps],
                    [l.get("grad_norm") for l in steps], saved, lines[-1], run.losses, run.norms,
                    run.final, run.grads, start)
        saved_by_policy.append(saved)
    # Checkpointing never changes results: both plans save the very same floats.
    checks.check(all(torch.equal(saved_by_policy[0][n], saved_by_policy[1][n]) for n in run.final),
                 f"{run.label}: the every:1 and none runs saved different weights")


RUNS = ["gpt2_dpo_full", "gpt2_dpo_lora", "gpt2_kto_full", "gpt2_kto_lora", "qwen2_dpo_full",
        "qwen2_dpo_lora", "qwen2_kto_full", "qwen2_kto_lora"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True, help="directory for models, data and logs")
    ap.add_argument("--remat", help="path of the remat binary: also compare remat's runs")
    ap.add_argument("--runs", default=",".join(RUNS), help="comma-separated runs (default: all)")
    ap.add_argument("--perturb", choices=sorted(PERTURBATIONS),
                    help="plant this mistake: the checks must then fail")
    args = ap.parse_args()
    global PERTURB
    PERTURB = args.perturb
    os.makedirs(args.workdir, exist_ok=True)
    models = {"gpt2": gpt2_model(), "qwen2": llama_model()}
    checks = ref.Checks()
    for name in args.runs.split(","):
        if name not in RUNS:
            ap.error(f"unknown run {name!r}; choose from {', '.join(RUNS)}")
        model, objective, mode = name.split("_")
        run = Run(models[model], objective, mode == "lora")
        run.train(checks)
        # Two steps that move nothing would compare equal to anything.
        moved = max(float((run.final[n] - w.to(torch.float64)).abs().max())
                    for n, w in (run.adapter if run.lora else models[model]["start"]).items())
        checks.check(moved > 1e-4, f"{run.label}: two steps moved no weight by more than {moved:.1e}")
        if run.objective == "kto":
            kinds = {k for m in run.metrics for k in m}
            checks.check({"rewards/chosen", "rewards/rejected", "rewards/margins"} <= kinds,
                         f"{run.label}: the batches lack a desirable or an undesirable example")
        if args.remat:
            remat_compare(checks, args.remat, args.workdir, name, models[model], objective,
                          mode == "lora")
    print(f"pytorch preference reference: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed remat run or an unreadable file: one clear message
        print(f"pytorch preference reference failed: {e}", file=sys.stderr)
        sys.exit(1)
