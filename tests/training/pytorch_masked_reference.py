#!/usr/bin/python3
"""remat against PyTorch with loss masks and gradient accumulation.

The odd-sized GPT of pytorch_reference.py (its weights, shapes, AdamW settings, tolerances and
comparison) trains 2 optimizer steps of 2 micro-batches each through remat::Session
(remat_masked_training_app), once under the policy every:1 and once under an arena cap. Targets
equal to 0xFFFFFFFF are not trained, and the micro-batches train very unequal counts: 5 and 40
targets in step 1, 40 and 5 in step 2, with whole rows ignored. The same steps run in float64
PyTorch with the loss every trainer since Hugging Face's 2024 fix uses: the cross-entropy summed
over the trained targets of all micro-batches, divided by their count. The per-step losses,
gradient norms and every saved weight must match it.

The comparison is also run against a reference that averages per-micro-batch means (the old
gradient accumulation bug): it must fail there, which shows the test can tell the two apart.

Usage: pytorch_masked_reference.py --remat PATH/TO/remat --app PATH/TO/remat_masked_training_app
                                   --workdir DIR
Exit status 0 when every comparison passes, 1 on any mismatch or failure.
"""

import argparse
import json
import os
import subprocess
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_reference as ref  # noqa: E402  (the model, file formats and comparison)

IGNORE = 0xFFFFFFFF  # remat's ignored target (base/ignore_target.h)
ACCUM = 2
# Trained targets per micro-batch, per step: unequal, so that a mean of per-micro-batch means
# weighs a target of the small micro-batch 8 times as much as one of the large.
TRAINED = [(5, 40), (40, 5)]
# The clip threshold lies between the two steps' gradient norms (4.22 and 4.06), as in
# pytorch_reference.py: a wrong loss scale would change which step is clipped. main() checks it.
CLIP = 4.14
SEED = 20241015


def micro_batch(gen, trained):
    """Random tokens and targets for one [BATCH, SEQ] micro-batch with `trained` targets kept.
    5 trained targets all lie in row 0 (rows 1 and 2 wholly ignored); 40 are spread over the
    rows. Returns (tokens, remat targets with IGNORE, PyTorch targets with -100)."""
    n = ref.BATCH * ref.SEQ
    tokens = torch.randint(0, ref.VOCAB, (ref.BATCH, ref.SEQ), generator=gen)
    targets = torch.randint(0, ref.VOCAB, (n,), generator=gen)
    pool = ref.SEQ if trained <= ref.SEQ else n
    keep = torch.randperm(pool, generator=gen)[:trained]
    mask = torch.zeros(n, dtype=torch.bool)
    mask[keep] = True
    remat_targets = [int(t) if m else IGNORE for t, m in zip(targets, mask)]
    torch_targets = torch.where(mask, targets, torch.full_like(targets, -100))
    return tokens, remat_targets, torch_targets.reshape(ref.BATCH, ref.SEQ)


def batches():
    gen = torch.Generator().manual_seed(SEED)
    return [[micro_batch(gen, t) for t in counts] for counts in TRAINED]


def reference_run(start, steps, mean_of_means):
    """2 float64 AdamW steps, each over ACCUM micro-batches whose gradients add up."""
    params = {n: w.to(torch.float64).clone().requires_grad_(True) for n, w in start.items()}
    decay = [p for p in params.values() if p.dim() == 2]
    no_decay = [p for p in params.values() if p.dim() != 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": ref.WD}, {"params": no_decay, "weight_decay": 0.0}],
        lr=ref.LR, betas=ref.BETAS, eps=ref.EPS)
    losses, norms, grads = [], [], []
    for micro_batches in steps:
        opt.zero_grad()
        trained = sum(int((t != -100).sum()) for _, _, t in micro_batches)
        step_loss = 0.0
        for tokens, _, targets in micro_batches:
            logits = ref.gpt2_logits(params, tokens)
            if mean_of_means:
                loss = torch.nn.functional.cross_entropy(logits, targets.reshape(-1)) / ACCUM
            else:
                loss = torch.nn.functional.cross_entropy(
                    logits, targets.reshape(-1), reduction="sum") / trained
            loss.backward()
            step_loss += loss.item()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm=CLIP)))
        grads.append({n: p.grad.detach().clone() for n, p in params.items()})
        opt.step()
        losses.append(step_loss)
    return losses, norms, {n: p.detach() for n, p in params.items()}, grads


def remat_run(app, workdir, name, weights, steps, memory):
    out = os.path.join(workdir, f"{name}.safetensors")
    if os.path.exists(out):
        os.remove(out)
    config = {"layers": ref.LAYERS, "dim": ref.DIM, "heads": ref.HEADS, "vocab": ref.VOCAB,
              "ctx": ref.CTX, "batch": ref.BATCH, "seq": ref.SEQ, "accum": ACCUM, "lr": ref.LR,
              "wd": ref.WD, "beta1": ref.BETAS[0], "beta2": ref.BETAS[1], "eps": ref.EPS,
              "grad_clip": CLIP, "init": weights, "save": out, **memory,
              "steps": [{"tokens": [t for tokens, _, _ in mbs for t in tokens.flatten().tolist()],
                         "targets": [t for _, targets, _ in mbs for t in targets]}
                        for mbs in steps]}
    path = os.path.join(workdir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(config, f)
    lines = [json.loads(l) for l in ref.run([app, path]).splitlines() if l.strip()]
    logged = [l for l in lines if "loss" in l]
    return ([l["loss"] for l in logged], [l["grad_norm"] for l in logged],
            ref.read_safetensors(out), lines[-1])


class QuietChecks(ref.Checks):
    """Counts like Checks without printing: for the comparison that must fail."""

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True, help="path of the remat binary (for `remat plan`)")
    ap.add_argument("--app", required=True, help="path of remat_masked_training_app")
    ap.add_argument("--workdir", required=True, help="directory for the weights and configs")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    start = ref.initial_weights()
    weights = os.path.join(args.workdir, "init.safetensors")
    ref.write_safetensors(weights, [(n, start[n]) for n, _ in ref.parameter_shapes()],
                          {"n_head": str(ref.HEADS)})
    steps = batches()
    ref_losses, ref_norms, ref_weights, ref_grads = reference_run(start, steps, False)
    mom_losses, mom_norms, mom_weights, mom_grads = reference_run(start, steps, True)

    checks = ref.Checks()
    for s, counts in enumerate(TRAINED):
        got = tuple(int((t != -100).sum()) for _, _, t in steps[s])
        checks.check(got == counts, f"step {s + 1} trains {got} targets, expected {counts}")
    checks.check(ref_norms[0] > CLIP > ref_norms[1], f"gradient norms {ref_norms} do not straddle "
                 f"the clip threshold {CLIP}: the test would not see a wrong loss scale")
    cap, minimum, full = ref.arena_cap(args.remat)
    saved_by_run = []
    for label, memory in (("every:1", {"policy": "every:1"}),
                          (f"arena cap {cap}", {"policy": "auto", "arena": cap})):
        name = "masked_" + label.replace(" ", "_").replace(":", "_")
        losses, norms, saved, summary = remat_run(args.app, args.workdir, name, weights, steps,
                                                  memory)
        ref.compare(checks, f"masked, {label}", losses, norms, saved, summary, ref_losses,
                    ref_norms, ref_weights, ref_grads, start)
        wrong = QuietChecks()
        ref.compare(wrong, f"masked, {label}, against a mean of micro-batch means (must fail)",
                    losses, norms, saved, summary, mom_losses, mom_norms, mom_weights, mom_grads,
                    start)
        checks.check(wrong.failed > 0, f"masked, {label}: remat also matches a mean of "
                     "micro-batch means: the comparison cannot tell the two losses apart")
        print(f"masked, {label}: {wrong.failed} of {wrong.passed + wrong.failed} checks fail "
              "against the mean of micro-batch means, as they must")
        saved_by_run.append(saved)
    checks.check(summary.get("arena_bytes", full) < full,
                 f"the capped run's arena {summary.get('arena_bytes')} is not below {full}")
    checks.check(all(torch.equal(saved_by_run[0][n], saved_by_run[1][n]) for n in ref_weights),
                 "the every:1 and the capped run saved different weights")
    print(f"PyTorch float64 token-weighted losses: {', '.join(f'{l:.6f}' for l in ref_losses)}; "
          f"mean of means: {', '.join(f'{l:.6f}' for l in mom_losses)}; gradient norms: "
          f"{', '.join(f'{n:.6f}' for n in ref_norms)}")
    print(f"pytorch masked comparison: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed run or an unreadable file: one clear message
        print(f"pytorch masked comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
