#!/usr/bin/python3
"""The float64 Qwen3.5 of pytorch_qwen35_reference.py as a training reference: its loss over rows
of tokens (packed rows included), its gradient by PyTorch's autograd through the sequential
recurrence (an algorithm independent of remat's kernels: no chunking, no hand-written backward),
LoRA as PEFT computes it, and AdamW as remat runs it. Run as a script, it checks that gradient
against central finite differences on a tiny model with both kinds of layer, a value head count
twice the key heads', a packed row and a masked target, so that the reference the remat
comparison (pytorch_qwen35_training.py) trusts is itself checked.

--perturb state-detached cuts the gradient through the recurrent state between steps (the forward
unchanged): the finite-difference check must then fail.

Usage: pytorch_qwen35_backward.py [--perturb state-detached]
Exit status 0 when every gradient matches (or torch is missing: skipped), 1 otherwise.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_qwen35_reference as q35  # noqa: E402  (the forward; exits 0 without torch)

torch = q35.torch
IGNORE = -100  # a target that is not trained (remat's kIgnoreTarget; cross_entropy's default)


# --- the loss ------------------------------------------------------------------------------------

def with_head(W, cfg):
    """The forward reads lm_head.weight; a tied model's is the embedding itself (one tensor, so
    the gradients of both uses add up in it)."""
    if cfg["tied"]:
        W = dict(W)
        W["lm_head.weight"] = W["model.embed_tokens.weight"]
    return W


def loss(W, cfg, rows, perturb=None):
    """The mean negative log-likelihood over every trained target of `rows` (a list of (tokens,
    targets, positions or None) of equal length; targets IGNORE where not trained), as remat's
    loss averages a step's trained targets. positions restart at 0 at each packed example."""
    W = with_head(W, cfg)
    total, count = 0, 0
    for tokens, targets, positions in rows:
        lp = q35.reference_log_probs(W, cfg, tokens, perturb, positions)
        t = torch.tensor(targets)
        trained = t != IGNORE
        total = total + -lp[trained].gather(1, t[trained][:, None]).sum()
        count += int(trained.sum())
    return total / count


# --- LoRA ----------------------------------------------------------------------------------------

def module_matches(module, targets):
    """PEFT's target_modules: the module path equals a target or ends in "." + target."""
    return any(module == t or module.endswith("." + t) for t in targets)


def lora_modules(W, targets):
    return [n[:-len(".weight")] for n in W if n.endswith(".weight") and W[n].dim() == 2 and
            n != "model.embed_tokens.weight" and n != "lm_head.weight" and
            module_matches(n[:-len(".weight")], targets)]


def peft_key(module, which):
    return f"base_model.model.{module}.lora_{which}.weight"


def adapted(W, adapter, scale):
    """W + scale (B A) on each adapted nn.Linear ([out, in]): x W^T + scale (x A^T) B^T, as PEFT's
    LoRA layer computes it, up to float64 rounding."""
    out = dict(W)
    for key, a in adapter.items():
        if key.endswith(".lora_A.weight"):
            module = key[len("base_model.model."):-len(".lora_A.weight")]
            out[module + ".weight"] = W[module + ".weight"] + scale * (
                adapter[peft_key(module, "B")] @ a)
    return out


# --- AdamW as remat runs it ----------------------------------------------------------------------

def decayed(name, t):
    """remat decays the parameters its graph holds as 2-D (graph/autodiff.cpp, the adamw op's
    weight_decay): every matrix and, unlike torch's convention on the checkpoint's [C, 1, K]
    tensor, the conv1d taps, which the graph holds as [C, K]."""
    return t.dim() == 2 or name.endswith("conv1d.weight")


def adamw_run(trained, batches, loss_of, lr, wd, betas, eps, clip, dtype=torch.float64):
    """len(batches) AdamW steps on `dtype` copies of `trained` (name -> float32 tensor) with
    torch.optim.AdamW's arithmetic (which remat's adamw kernel follows: decay first, bias
    corrections in PyTorch's form) after clip_grad_norm_ to `clip` (inf: none). loss_of(P, rows)
    gives the loss. Returns per-step losses, global gradient norms before clipping, the final
    tensors and each step's gradients."""
    P = {n: w.to(dtype).clone().requires_grad_(True) for n, w in trained.items()}
    opt = torch.optim.AdamW(
        [{"params": [p for n, p in P.items() if decayed(n, p)], "weight_decay": wd},
         {"params": [p for n, p in P.items() if not decayed(n, p)], "weight_decay": 0.0}],
        lr=lr, betas=betas, eps=eps)
    losses, norms, grads = [], [], []
    for rows in batches:
        opt.zero_grad()
        value = loss_of(P, rows)
        value.backward()
        for p in P.values():  # a parameter a (perturbed) model never reads: gradient zero
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(P.values()), max_norm=clip)))
        grads.append({n: p.grad.detach().clone() for n, p in P.items()})
        opt.step()
        losses.append(value.item())
    return losses, norms, {n: p.detach() for n, p in P.items()}, grads


# --- the finite-difference check -----------------------------------------------------------------

# Small enough that every element of every tensor is checked in seconds: 2 layers (layer 0 Gated
# DeltaNet, layer 1 gated attention), 2 value heads on 1 key head, dk 4 != dv 3, a conv of 3 taps
# over rows of 9 tokens; head_dim 8 with RoPE on a quarter (2 dims: one frequency).
TINY = dict(hidden=12, ffn=10, vocab=17, k_heads=1, v_heads=2, dk=4, dv=3, conv=3, heads=2,
            kv_heads=1, head_dim=8, partial_rotary_factor=0.25, rope_theta=10000.0, eps=1e-6,
            layers=2, mrope_section=[1, 0, 0], interval=2, tied=False, seed=31)
# Central differences in float64: truncation ~ h^2 |f'''| ~ 1e-12 and cancellation ~ 1e-16 / h
# ~ 1e-11 on a loss of a few nats, so autograd and the difference quotient agree to ~1e-10;
# 1e-7 of the tensor's largest gradient (+ 1e-9) leaves a wide margin, while a gradient that
# misses a path through the recurrence is off by percent.
FD_STEP, FD_RTOL, FD_ATOL = 1e-5, 1e-7, 1e-9
FD_PERTURBATIONS = ["state-detached"]


def tiny_rows(cfg):
    """One plain row and one packed row (examples of 4 and 5 positions, the second restarting at
    0), one target of each ignored, as remat's rows are."""
    gen = torch.Generator().manual_seed(3)
    rows = []
    for positions in (None, list(range(4)) + list(range(5))):
        tokens = torch.randint(0, cfg["vocab"], (9,), generator=gen).tolist()
        targets = torch.randint(0, cfg["vocab"], (9,), generator=gen).tolist()
        targets[3 if positions else 0] = IGNORE
        rows.append((tokens, targets, positions))
    return rows


def fd_check(perturb):
    cfg = TINY
    start = {n: w.to(torch.float64) for n, w in q35.random_checkpoint(cfg).items()}
    rows = tiny_rows(cfg)
    P = {n: w.clone().requires_grad_(True) for n, w in start.items()}
    loss(P, cfg, rows, perturb).backward()
    worst, failed, checked = 0.0, 0, 0
    with torch.no_grad():
        for name, w in start.items():
            grad = P[name].grad if P[name].grad is not None else torch.zeros_like(w)
            fd = torch.zeros_like(w).flatten()
            for i in range(w.numel()):
                plus, minus = w.clone().flatten(), w.clone().flatten()
                plus[i] += FD_STEP
                minus[i] -= FD_STEP
                value = [loss({**start, name: t.view_as(w)}, cfg, rows, perturb).item()
                         for t in (plus, minus)]
                fd[i] = (value[0] - value[1]) / (2 * FD_STEP)
            err = (fd.view_as(w) - grad).abs().max().item()
            tol = FD_ATOL + FD_RTOL * fd.abs().max().item()
            worst = max(worst, err / tol)
            checked += w.numel()
            if not err <= tol:
                failed += 1
                print(f"FAIL: {name}: autograd off finite differences by {err:.3g} "
                      f"(tolerance {tol:.3g})")
    print(f"qwen35 gradient check: {checked} elements of {len(start)} tensors, worst error "
          f"{worst:.3g} of its tolerance (step {FD_STEP:g}, rtol {FD_RTOL:g}, atol {FD_ATOL:g}); "
          f"{len(start) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perturb", choices=FD_PERTURBATIONS)
    return fd_check(ap.parse_args().perturb)


if __name__ == "__main__":
    sys.exit(main())
