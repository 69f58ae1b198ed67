#!/usr/bin/python3
"""remat's Qwen3.5 training step beside PyTorch CPU's, on one file, in one run (on demand, not CI).

usage: /usr/bin/python3 samples/compare_pytorch_qwen35.py --remat build/bin/remat
           --random-gguf build/bin/remat_random_gguf_model --gguf-py build-data/llama.cpp/gguf-py
           [--preset qwen3.5-0.8b] [--layers 4] [--batch 4] [--seq 512] [--steps 2]
           [--lora 8] [--memory 2GiB] [--threads 2] [--workdir DIR]
           [--perturb NAME]

One f32 GGUF of the preset's shape with remat's seeded weights (remat_random_gguf_model; --layers
keeps the first N layers, at the real widths) is trained one AdamW step at a time, LoRA of rank
--lora on the ten projections remat adapts by default (q, k, v, o, gate, up, down; in_proj_qkv,
in_proj_z, out_proj), alpha 2r, the f32 base frozen (a full fine-tuning step of the 248,320-row
embedding, its gradient and moments, would not fit lavapipe's 2 GiB):
  - by remat on the default Vulkan device (`remat train --init FILE --lora R --memory 2GiB`: what
    to recompute and the loss chunk planned into lavapipe's 2 GiB, as a user would run it),
  - by PyTorch CPU float32 running the float64 reference's twin: tests/training/
    pytorch_qwen35_reference.py's forward (transformers' semantics, the delta rule token by token
    as transformers' torch_recurrent_gated_delta_rule does), imported and run at float32, with
    autograd for the backward, on the weights read back from the same file through the
    reference's inverse of llama.cpp's converter. Each adapted weight W is replaced by an object
    whose product with h is h W^T + (alpha/r) (h A^T) B^T, so the frozen base costs the forward
    and dX products only, as it does in remat and PEFT.
Both read the same tokens: the bytes of --data, row b of step s the window starting at
(s*B + b)*T (docs/cli.md, data contract), so the first step's losses must agree to float32
rounding (printed, and the run fails when they differ by more than LOSS_TOLERANCE: then the two
did not train the same model and the times mean nothing). PyTorch runs each row's forward and
backward in turn, gradients accumulated, then one AdamW step: the step's arithmetic, with one
row's recurrence graph held at a time (a whole batch's, 2 MB of state per token and layer,
would not fit this machine). Step time is the median of the steps after the first (the first
compiles pipelines or warms allocators); the ratio is remat / PyTorch. --perturb NAME plants one
of the reference's mistakes (pytorch_qwen35_reference.py --perturb) in the twin, to see the loss
check fail.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "training"))
import pytorch_qwen35_reference as ref  # noqa: E402  (sets float64; reset below)

torch.set_default_dtype(torch.float32)

# |loss difference| allowed between remat and PyTorch on the first step, relative to the loss:
# both are float32 over the same weights and tokens, summing in different orders; a wrong layer
# moves a loss of ~12.4 nats by far more than 1e-3 of it.
LOSS_TOLERANCE = 1e-3


def config(md, layers):
    """The reference's cfg dict from remat's preset (graph/model_config.cpp, qwen35_preset)."""
    return dict(hidden=md["dim"], ffn=md["ffn"], vocab=248320, k_heads=16, v_heads=16, dk=128,
                dv=128, conv=4, heads=8, kv_heads=2, head_dim=256, partial_rotary_factor=0.25,
                rope_theta=1e7, eps=1e-6, layers=layers, interval=4, tied=True,
                mrope_section=[11, 11, 10])


PRESETS = {"qwen3.5-0.8b": dict(dim=1024, ffn=3584, layers=24),
           "qwen3.5-2b": dict(dim=2048, ffn=6144, layers=24)}


def make_file(args):
    path = os.path.join(args.workdir,
                        f"{args.preset}-L{args.layers}-{args.base_type.lower()}.gguf")
    if not os.path.exists(path):
        subprocess.run([args.random_gguf, args.preset, path, args.base_type, str(args.layers)],
                       check=True)
    return path


LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                "in_proj_qkv", "in_proj_z", "out_proj")  # graph/lora.cpp default_lora_targets


class LoraWeight:
    """Stands for W in the reference's `h @ W.T`: h W^T + scale (h A^T) B^T (PEFT's LoRA)."""

    def __init__(self, w, rank, alpha, gen):
        out_f, in_f = w.shape
        self.w, self.scale = w, alpha / rank
        bound = 1 / math.sqrt(in_f)  # PEFT: kaiming_uniform_(a=sqrt(5)) on A, B zero
        self.a = ((torch.rand(rank, in_f, generator=gen) * 2 - 1) * bound).requires_grad_(True)
        self.b = torch.zeros(out_f, rank, requires_grad=True)

    @property
    def T(self):
        return self

    def __rmatmul__(self, h):
        return h @ self.w.T + self.scale * ((h @ self.a.T) @ self.b.T)


def load_weights(path, cfg, gguf_py, rank, perturb=None):
    """The reference's weights (float64, undone from the converter's forms) as the twin's
    float32 frozen base, LoRA on the targets, and the list of trained tensors."""
    W = ref.undo_converter(ref.read_gguf(path, gguf_py), cfg, perturb)
    gen = torch.Generator().manual_seed(0)
    out, trained = {}, []
    for name, t in W.items():
        t = t.to(torch.float32).contiguous()
        if name.endswith(".weight") and name.split(".")[-2] in LORA_TARGETS:
            lw = LoraWeight(t, rank, 2.0 * rank, gen)
            out[name] = lw
            trained += [lw.a, lw.b]
        else:
            out[name] = t
    out["lm_head.weight"] = out["model.embed_tokens.weight"]  # tied
    return out, trained


def rows(data, step, batch, seq):
    n = len(data)
    out = []
    for b in range(batch):
        start = ((step * batch + b) * seq) % (n - seq - 1)
        out.append(list(data[start:start + seq + 1]))
    return out


def torch_steps(args, cfg, W, trained, data):
    torch.set_num_threads(args.threads)
    opt = torch.optim.AdamW(trained, lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    losses, times = [], []
    for step in range(args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for r in rows(data, step, args.batch, args.seq):
            logp = ref.reference_log_probs(W, cfg, torch.tensor(r[:-1]), args.perturb)
            loss = F.nll_loss(logp, torch.tensor(r[1:])) / args.batch
            loss.backward()
            total += loss.item()
            del logp, loss
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(total)
        print(f"pytorch step {step}: loss {total:.6f}, {times[-1]:.0f} ms", flush=True)
    return losses, times


def remat_steps(args, path):
    log = os.path.join(args.workdir, "remat-log.jsonl")
    cmd = [args.remat, "train", "--init", path, "--batch", str(args.batch), "--seq",
           str(args.seq), "--steps", str(args.steps), "--lora", str(args.lora), "--lr",
           str(args.lr), "--wd", "0", "--grad-clip", "0", "--warmup-steps", "0", "--memory", args.memory,
           "--data", args.data, "--data-format", "bytes", "--log-json", log]
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode != 0:
        raise SystemExit(f"remat train failed ({r.returncode})")
    steps = [json.loads(line) for line in open(log) if '"summary"' not in line]
    return [s["loss"] for s in steps], [s["ms"] for s in steps]


def median_after_first(times):
    return statistics.median(times[1:] if len(times) > 1 else times)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True)
    ap.add_argument("--random-gguf", required=True, help="tests/tools' remat_random_gguf_model")
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--preset", default="qwen3.5-0.8b", choices=sorted(PRESETS))
    ap.add_argument("--layers", type=int, default=4, help="the first N layers, real widths")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lora", type=int, default=8)
    ap.add_argument("--base-type", default="F32",
                    help="the file's type (F32, Q8_0, Q4_K_M, ...): remat keeps a quantized base "
                         "in its blocks (QLoRA), PyTorch runs its dequantized values in float32; "
                         "all 24 layers of 0.8B at F32 exceed lavapipe's 2 GiB")
    ap.add_argument("--memory", default="2GiB", help="remat's --memory: what it plans into")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--data", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--workdir", default="/tmp/remat-qwen35-compare")
    ap.add_argument("--perturb", choices=ref.PERTURBATIONS)
    args = ap.parse_args()
    if args.layers < 1 or args.layers > PRESETS[args.preset]["layers"]:
        raise SystemExit(f"--layers must be 1..{PRESETS[args.preset]['layers']}")
    os.makedirs(args.workdir, exist_ok=True)
    path = make_file(args)
    cfg = config(PRESETS[args.preset], args.layers)
    data = open(args.data, "rb").read()
    r_loss, r_ms = remat_steps(args, path)
    W, trained = load_weights(path, cfg, args.gguf_py, args.lora, args.perturb)
    t_loss, t_ms = torch_steps(args, cfg, W, trained, data)
    diff = abs(r_loss[0] - t_loss[0]) / abs(t_loss[0])
    layers = "".join("D" if ref.is_linear(cfg, i) else "A" for i in range(args.layers))
    print(f"\n{args.preset} widths, {args.layers} layers ({layers}: D Gated DeltaNet, A gated "
          f"attention), B={args.batch} T={args.seq}, LoRA r{args.lora} on a {args.base_type} "
          "base, AdamW")
    print(f"first-step loss: remat {r_loss[0]:.6f}, pytorch {t_loss[0]:.6f}, relative "
          f"difference {diff:.2e} (tolerance {LOSS_TOLERANCE})"
          f"{'' if diff <= LOSS_TOLERANCE else ': FAILED'}")
    rm, tm = median_after_first(r_ms), median_after_first(t_ms)
    tokens = args.batch * args.seq
    print(f"{'':24} {'ms/step':>10} {'tok/s':>8}")
    print(f"{'remat (lavapipe)':24} {rm:10.0f} {tokens / rm * 1e3:8.1f}")
    print(f"{f'pytorch cpu {args.threads} thr':24} {tm:10.0f} {tokens / tm * 1e3:8.1f}")
    print(f"remat / pytorch step time: {rm / tm:.2f}x")
    return 0 if diff <= LOSS_TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
