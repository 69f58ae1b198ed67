#!/usr/bin/python3
"""remat against the float64 Qwen3.5 reference, two AdamW steps, full fine-tuning and LoRA.

Writes random tiny Qwen3.5 text models as Hugging Face folders (config.json of model_type
qwen3_5_text, model.safetensors in the checkpoint's names and shapes: conv1d [C, 1, K], A_log,
dt_bias, zero-centred norms), trains each for 2 AdamW steps with `remat train --init DIR`, and
repeats the steps in float64 PyTorch (pytorch_qwen35_backward.py: the sequential recurrence of
pytorch_qwen35_reference.py, which agrees with llama.cpp's forward, differentiated by autograd).
Per-step losses, gradient norms and every saved weight (full: `--save DIR`, under the policies
none and every:1 and an arena cap, which must save the same bits) or adapter (LoRA: a PEFT
adapter with B not zero continued by `--lora-init`, saved by `--save-adapter`) are compared with
the tolerances of the GPT-2 comparison (pytorch_reference.py). `packed` trains JSONL examples
packed several to a row (`--pack`; a tokenizer.json of the 256 bytes and <|endoftext|>, so the
reference reads the ids straight from the bytes): the recurrent state, the conv window, RoPE and
attention restart at every example, and a prompt/completion example trains only its completion.

Models (4 layers, width 48, MLP 80, vocabulary 300; Gated DeltaNet heads of dk 16 and dv 12 with
a conv of 4 taps; gated attention with 4 query heads of 32 on 2 key/value heads, RoPE on 8 of
32 dims): `hv_twice_hk` has 4 value heads on 2 key heads, a full-attention layer every fourth
(layer 3) and a tied head; `untied` has 2 and 2, full attention every second layer (1 and 3)
and an output matrix.

--perturb plants one mistake in the reference; the comparison must then fail:
  decay-sign      g = +exp(A_log) softplus(a + dt_bias): the state grows instead of decaying
  conv-reversed   the conv1d taps applied in reverse order
  no-gate         full attention's output not multiplied by sigmoid(gate)
  gate-halves     q_proj's output split in halves instead of per head
  rope-full       RoPE on the whole head instead of a quarter
  kv-tiled        value head h reads key head h % Hk instead of h // (Hv / Hk)
  packed-as-one   a packed row evaluated as one sequence (nothing restarts at position 0)
With --perturb, each run kind goes under one policy (every:1) only.

Usage: pytorch_qwen35_training.py --remat PATH/remat --workdir DIR [--variants A,B]
       [--runs full,lora,packed] [--perturb NAME]
Exit status 0 when every comparison passes (or torch is missing: skipped), 1 otherwise.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_qwen35_backward as ref  # noqa: E402  (exits 0 without torch: skipped)
import pytorch_qwen35_reference as q35  # noqa: E402
import pytorch_reference as common  # noqa: E402  (safetensors, data, tolerances, comparison)

torch = ref.torch
BATCH, SEQ, STEPS = common.BATCH, common.SEQ, common.STEPS  # 3 rows of 23 tokens, 2 steps
LR, WD, BETAS, EPS = common.LR, common.WD, common.BETAS, common.EPS
SHAPE = dict(hidden=48, ffn=80, vocab=300, dk=16, dv=12, conv=4, heads=4, kv_heads=2,
             head_dim=32, partial_rotary_factor=0.25, rope_theta=10000.0, eps=1e-6, layers=4,
             mrope_section=[2, 1, 1])
# Seeds whose starts are well conditioned for float32 (initial_weights says how that is measured):
# with seed 41, hv_twice_hk's second-step gradient norm is still 1e-5 off in float32 PyTorch.
VARIANTS = {
    "hv_twice_hk": dict(SHAPE, k_heads=2, v_heads=4, interval=4, tied=True, seed=45),
    "untied": dict(SHAPE, k_heads=2, v_heads=2, interval=2, tied=False, seed=42),
}
RUNS = ["full", "lora", "packed"]
PERTURBATIONS = ["decay-sign", "conv-reversed", "no-gate", "gate-halves", "rope-full", "kv-tiled",
                 "packed-as-one"]
# LoRA: rank 3, alpha 5 on remat's default Qwen3.5 targets (graph/lora.cpp): the attention and
# MLP projections and the Gated DeltaNet's in_proj_qkv, in_proj_z and out_proj.
RANK, ALPHA = 3, 5.0
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
           "in_proj_qkv", "in_proj_z", "out_proj"]
SEED = 20261128


# --- the folder ----------------------------------------------------------------------------------

def hf_config(cfg):
    """config.json as transformers 5 writes Qwen3_5TextConfig (rope_parameters)."""
    layer_types = ["linear_attention" if q35.is_linear(cfg, i) else "full_attention"
                   for i in range(cfg["layers"])]
    return {
        "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
        "hidden_size": cfg["hidden"], "intermediate_size": cfg["ffn"],
        "num_hidden_layers": cfg["layers"], "num_attention_heads": cfg["heads"],
        "num_key_value_heads": cfg["kv_heads"], "head_dim": cfg["head_dim"],
        "vocab_size": cfg["vocab"], "max_position_embeddings": 64, "hidden_act": "silu",
        "rms_norm_eps": cfg["eps"], "linear_conv_kernel_dim": cfg["conv"],
        "linear_key_head_dim": cfg["dk"], "linear_value_head_dim": cfg["dv"],
        "linear_num_key_heads": cfg["k_heads"], "linear_num_value_heads": cfg["v_heads"],
        "full_attention_interval": cfg["interval"], "layer_types": layer_types,
        "attn_output_gate": True, "mtp_num_hidden_layers": 0, "attention_bias": False,
        "rope_parameters": {"rope_type": "default", "rope_theta": cfg["rope_theta"],
                            "partial_rotary_factor": cfg["partial_rotary_factor"],
                            "mrope_section": cfg["mrope_section"], "mrope_interleaved": True},
        "tie_word_embeddings": cfg["tied"], "dtype": "float32",
    }


# The keys remat must write back as they were read (the layer structure and sizes).
SAVED_KEYS = ["model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
              "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
              "linear_num_key_heads", "linear_num_value_heads", "layer_types",
              "tie_word_embeddings"]


def write_folder(path, cfg, weights):
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(hf_config(cfg), f, indent=2)
    common.write_safetensors(os.path.join(path, "model.safetensors"), sorted(weights.items()),
                             {"format": "pt"})


# --- the rows ------------------------------------------------------------------------------------

def text_rows(data, step):
    """`remat train --data FILE` on a folder without a tokenizer: each byte is a token id, and
    row b of step s is the window of the GPT-2 comparison's contract (pytorch_reference.batch)."""
    tokens, targets = common.batch(data, step)
    return [(tokens[b].tolist(), targets[b].tolist(), None) for b in range(BATCH)]


EOS = 256  # <|endoftext|> in the byte tokenizer below
# JSONL examples for --pack, in file order. A text of n bytes is n byte tokens and eos: n
# positions. The prompt/completion is 12 bytes (7 + 5) and eos, its completion and eos trained
# (docs/cli.md). First fit (formats/example_packing.h) fills BATCH * STEPS rows of SEQ = 23
# positions exactly, no padding: 9 + 14 | 23 | 5 + 7 + 11 | 4 + 19 | 12 + 11 | 23.
PACKED_EXAMPLES = [
    {"text": "Gated del"}, {"text": "ta nets forget"}, {"text": "The state restarts at 0"},
    {"text": "conv!"}, {"text": "windows"}, {"text": "roll over 0"}, {"text": "abcd"},
    {"text": "positions count up!"}, {"prompt": "Q: 2+2?", "completion": " A: 4"},
    {"text": "Hello world"}, {"text": "causal conv1d + delta!!"},
]


def example_tokens(example):
    """Token ids and per-token trained flags: the bytes, then eos."""
    if "text" in example:
        ids = list(example["text"].encode()) + [EOS]
        return ids, [1] * len(ids)
    prompt, completion = example["prompt"].encode(), example["completion"].encode()
    return list(prompt + completion) + [EOS], [0] * len(prompt) + [1] * (len(completion) + 1)


def packed_rows(perturb):
    """The rows one pass packs first fit, as (tokens, targets, positions); target t is token t+1
    of the same example where trained. packed-as-one drops the positions (nothing restarts)."""
    rows = []  # lists of examples' (ids, mask)
    for example in PACKED_EXAMPLES:
        ids, mask = example_tokens(example)
        fits = [r for r in rows if sum(len(i) - 1 for i, _ in r) + len(ids) - 1 <= SEQ]
        (fits[0] if fits else rows.append([]) or rows[-1]).append((ids, mask))
    out = []
    for r in rows:
        tokens, targets, positions = [], [], []
        for ids, mask in r:
            tokens += ids[:-1]
            targets += [t if m else ref.IGNORE for t, m in zip(ids[1:], mask[1:])]
            positions += list(range(len(ids) - 1))
        if len(tokens) != SEQ:
            raise RuntimeError(f"a packed row holds {len(tokens)} positions, not {SEQ}: the "
                               "examples no longer fill their rows")
        out.append((tokens, targets, None if perturb == "packed-as-one" else positions))
    if len(out) != BATCH * STEPS:
        raise RuntimeError(f"the examples pack into {len(out)} rows, not {BATCH * STEPS}")
    return [out[s * BATCH:(s + 1) * BATCH] for s in range(STEPS)]


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256+."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    extra = [b for b in range(256) if b not in keep]
    table = {b: chr(b) for b in keep}
    table.update({b: chr(256 + n) for n, b in enumerate(extra)})
    return table


def write_tokenizer(path):
    """A byte-level BPE of the 256 bytes (byte b is id b) and no merges, <|endoftext|> 256, so
    every text encodes to its bytes whatever the pre-tokenizer splits."""
    os.makedirs(path, exist_ok=True)
    vocab = {ch: b for b, ch in bytes_to_unicode().items()}
    vocab["<|endoftext|>"] = EOS
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": EOS, "content": "<|endoftext|>", "single_word": False,
                             "lstrip": False, "rstrip": False, "normalized": False,
                             "special": True}],
           "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level,
           "decoder": byte_level,
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": "", "end_of_word_suffix": "",
                     "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": []}}
    with open(os.path.join(path, "tokenizer.json"), "w") as f:
        json.dump(tok, f)


def check_tokens(checks, remat, jsonl, tokenizer):
    """remat reads each example as the reference does: its bytes, eos, the trained mask."""
    out = common.run([remat, "tokenize", "--jsonl", jsonl, "--tokenizer", tokenizer])
    got = [json.loads(line) for line in out.splitlines() if line.strip()]
    want = [example_tokens(e) for e in PACKED_EXAMPLES]
    checks.check([(g["ids"], g["mask"]) for g in got] == [(list(i), list(m)) for i, m in want],
                 f"remat tokenize --jsonl reads the examples otherwise: {got}")


# --- the reference -------------------------------------------------------------------------------

def initial_weights(cfg):
    """The forward comparison's random checkpoint (pytorch_qwen35_reference.random_checkpoint:
    matrices in +-0.3, zero-centred norms, A and dt_bias with a memory of several steps) made
    well conditioned for float32, which remat computes in:
    - the embedding in +-0.3, not +-1: as a tied head, +-1 gives a loss near 12.5 and logits
      spread over 17+ nats;
    - each Gated DeltaNet key channel's in_proj_qkv row and conv taps those of the matching query
      channel plus U(+-0.1). Random q and k heads are nearly orthogonal, so the first output,
      o_0 = beta_0 (q_0 . k_0) v_0 / sqrt(dk), often cancels to ~1e-5, and the gated RMSNorm
      scales it back up: float32's rounding of that dot product becomes an error of the output
      itself. Measured with a float32 PyTorch run of the same steps (qwen35_float32_standin.py):
      independent q and k put its second step's gradient norm 2.5e-4 (untied) and 3.7e-4 off,
      k near q 1e-7 to 7e-7, the other families' order."""
    w = q35.random_checkpoint(cfg)
    w["model.embed_tokens.weight"] = w["model.embed_tokens.weight"] * 0.3
    gen = torch.Generator().manual_seed(cfg["seed"] + 1000)
    key = cfg["k_heads"] * cfg["dk"]
    for i in range(cfg["layers"]):
        a = f"model.layers.{i}.linear_attn."
        for name in (a + "in_proj_qkv.weight", a + "conv1d.weight") if q35.is_linear(cfg, i) \
                else ():
            t = w[name].clone()
            noise = torch.rand(t[:key].shape, generator=gen, dtype=torch.float32) * 0.2 - 0.1
            t[key:2 * key] = t[:key] + noise
            w[name] = t
    return w


def initial_adapter(base, cfg):
    """A as PEFT initialises it (U(+-1/sqrt(in))), B small and random rather than zero so that A
    has a gradient from the first step; rounded to float32 like the base."""
    gen = torch.Generator().manual_seed(SEED)
    adapter = {}
    for m in ref.lora_modules(base, TARGETS):
        out, fan_in = base[m + ".weight"].shape
        a = (torch.rand(RANK, fan_in, generator=gen) * 2 - 1) / math.sqrt(fan_in)
        adapter[ref.peft_key(m, "A")] = a.to(torch.float32)
        adapter[ref.peft_key(m, "B")] = (torch.randn(out, RANK, generator=gen) * 0.05).to(
            torch.float32)
    return adapter


def reference(kind, cfg, start, adapter, batches, clip, perturb):
    """The float64 run of `kind` (full and packed train every tensor, lora the adapters)."""
    if kind == "lora":
        base = {n: w.to(torch.float64) for n, w in start.items()}
        return ref.adamw_run(adapter, batches, lambda L, rows: ref.loss(
            ref.adapted(base, L, ALPHA / RANK), cfg, rows, perturb), LR, WD, BETAS, EPS, clip)
    return ref.adamw_run(start, batches, lambda P, rows: ref.loss(P, cfg, rows, perturb), LR, WD,
                         BETAS, EPS, clip)


def clip_between(kind, cfg, start, adapter, batches):
    """A clip threshold between the unclipped, unperturbed steps' gradient norms (their
    geometric mean): one step clipped, the other not, whatever --perturb plants."""
    _, norms, _, _ = reference(kind, cfg, start, adapter, batches, math.inf, None)
    return float(f"{math.sqrt(norms[0] * norms[1]):.3g}")


# --- remat ---------------------------------------------------------------------------------------

def remat_run(remat, workdir, name, args, clip):
    """`remat train` for STEPS steps with the comparison's AdamW; the per-step losses and
    gradient norms and the last log line."""
    log = os.path.join(workdir, name + ".json")
    if os.path.exists(log):
        os.remove(log)
    common.run([remat, "train", *args, "--batch", str(BATCH), "--seq", str(SEQ), "--steps",
                str(STEPS), "--lr", str(LR), "--wd", str(WD), "--beta1", str(BETAS[0]),
                "--beta2", str(BETAS[1]), "--eps", str(EPS), "--grad-clip", str(clip),
                "--log-json", log, "--quiet"])
    with open(log) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    steps = [l for l in lines if "step" in l and "loss" in l and not l.get("summary")]
    return [l["loss"] for l in steps], [l.get("grad_norm") for l in steps], lines[-1]


def fresh(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    return path


def run_full(remat, workdir, name, folder, data_args, clip, flags):
    out = fresh(os.path.join(workdir, name + ".out"))
    losses, norms, summary = remat_run(remat, workdir, name, ["--init", folder, *data_args,
                                                              *flags, "--save", out], clip)
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    return losses, norms, common.read_safetensors(os.path.join(out, "model.safetensors")), \
        summary, config


def run_lora(remat, workdir, name, folder, adapter_dir, data_args, clip, flags):
    out = fresh(os.path.join(workdir, name + ".adapter"))
    losses, norms, summary = remat_run(remat, workdir, name, [
        "--init", folder, "--lora-init", adapter_dir, *data_args, *flags, "--save-adapter", out],
        clip)
    return losses, norms, common.read_safetensors(
        os.path.join(out, "adapter_model.safetensors")), summary, None


def write_adapter(path, adapter):
    os.makedirs(path, exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": None,
              "r": RANK, "lora_alpha": ALPHA, "target_modules": TARGETS, "lora_dropout": 0.0,
              "bias": "none", "fan_in_fan_out": False, "use_rslora": False, "use_dora": False,
              "init_lora_weights": True, "modules_to_save": None}
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(config, f)
    common.write_safetensors(os.path.join(path, "adapter_model.safetensors"),
                             sorted(adapter.items()), {"format": "pt"})


# --- the comparison ------------------------------------------------------------------------------

def arena_cap(remat, folder, plan_flags):
    """Halfway between the smallest feasible arena and storing everything, from `remat plan`."""
    shape = ["--init", folder, "--batch", str(BATCH), "--seq", str(SEQ), *plan_flags]
    full = json.loads(common.run([remat, "plan", *shape, "--policy", "none", "--json"]))
    r = subprocess.run([remat, "plan", *shape, "--arena", "1"], capture_output=True, text=True)
    found = re.search(r"minimum is (\d+) bytes", r.stderr)
    if r.returncode == 0 or not found:
        raise RuntimeError(f"`remat plan --arena 1` did not name the minimum arena: {r.stderr}")
    minimum = int(found.group(1))
    return (minimum + full["arena_bytes"]) // 2, minimum, full["arena_bytes"]


def policies(remat, folder, kind_plan_flags, perturb, checks, label):
    """(label, flags): every:1 alone under --perturb; else none, every:1 and an arena cap halfway
    between the smallest feasible arena and storing everything (recompute forced)."""
    if perturb:
        return [("every:1", ["--policy", "every:1"])]
    cap, minimum, full = arena_cap(remat, folder, kind_plan_flags)
    checks.check(minimum < cap < full, f"{label}: arena cap {cap} is not between the minimum "
                 f"{minimum} and the store-everything arena {full}")
    return [("none", ["--policy", "none"]), ("every:1", ["--policy", "every:1"]),
            (f"arena cap {cap}", ["--arena", str(cap)])]


def check_kind(checks, remat, workdir, name, cfg, kind, perturb, data):
    start = initial_weights(cfg)
    folder = os.path.join(workdir, name)
    write_folder(folder, cfg, start)
    if kind == "packed":
        write_tokenizer(os.path.join(workdir, "tokenizer"))
        jsonl = os.path.join(workdir, "packed.jsonl")
        with open(jsonl, "w") as f:
            f.write("".join(json.dumps(e) + "\n" for e in PACKED_EXAMPLES))
        data_args = ["--data", jsonl, "--tokenizer", os.path.join(workdir, "tokenizer"), "--pack"]
        check_tokens(checks, remat, jsonl, os.path.join(workdir, "tokenizer"))
        batches, clean = packed_rows(perturb), packed_rows(None)
    else:
        data_args = ["--data", data]
        with open(data, "rb") as f:
            data_bytes = f.read()
        batches = clean = [text_rows(data_bytes, s) for s in range(STEPS)]
    adapter = initial_adapter(start, cfg) if kind == "lora" else None
    if adapter:
        write_adapter(os.path.join(workdir, name + "_peft"), adapter)
    clip = clip_between(kind, cfg, start, adapter, clean)
    ref_losses, ref_norms, ref_weights, ref_grads = reference(kind, cfg, start, adapter, batches,
                                                              clip, perturb)
    label = f"{name} {kind}"
    checks.check(min(ref_norms) < clip < max(ref_norms), f"{label}: gradient norms {ref_norms} "
                 f"do not straddle the clip threshold {clip}")
    saved_by_run = []
    plan_flags = {"full": [], "packed": ["--pack"],
                  "lora": ["--lora", str(RANK), "--lora-alpha", str(ALPHA), "--lora-targets",
                           ",".join(TARGETS)]}[kind]
    for policy, flags in policies(remat, folder, plan_flags, perturb, checks, label):
        run = f"{name}_{kind}_{policy}".replace(" ", "_").replace(":", "_")
        if kind == "lora":
            got = run_lora(remat, workdir, run, folder, os.path.join(workdir, name + "_peft"),
                           data_args, clip, flags)
        else:
            got = run_full(remat, workdir, run, folder, data_args, clip, flags)
        losses, norms, saved, summary, config = got
        common.compare(checks, f"{label}, {policy}", losses, norms, saved, summary, ref_losses,
                       ref_norms, ref_weights, ref_grads, adapter or start)
        want = hf_config(cfg)
        for key in SAVED_KEYS if config is not None else []:
            checks.check(config.get(key) == want[key], f"{label}, {policy}: saved config.json "
                         f"has {key} = {config.get(key)!r}, expected {want[key]!r}")
        saved_by_run.append(saved)
    checks.check(all(torch.equal(saved_by_run[0][n], s[n]) for s in saved_by_run[1:]
                     for n in ref_weights if n in s and n in saved_by_run[0]),
                 f"{label}: the runs under different policies saved different bits")
    print(f"{label}: PyTorch float64 losses {', '.join(f'{l:.6f}' for l in ref_losses)}; "
          f"gradient norms {', '.join(f'{n:.6f}' for n in ref_norms)}; clip {clip}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--remat", required=True, help="path of the remat binary")
    ap.add_argument("--workdir", required=True, help="directory for the folders, data and logs")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--runs", default=",".join(RUNS), help="of " + ", ".join(RUNS))
    ap.add_argument("--perturb", choices=PERTURBATIONS)
    args = ap.parse_args()
    variants, runs = args.variants.split(","), args.runs.split(",")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    for r in runs:
        if r not in RUNS:
            ap.error(f"unknown run {r!r}; choose from {', '.join(RUNS)}")
    os.makedirs(args.workdir, exist_ok=True)
    data = os.path.join(args.workdir, "data.txt")
    with open(data, "wb") as f:
        f.write(common.training_text())
    checks = common.Checks()
    for v in variants:
        for kind in runs:
            check_kind(checks, args.remat, args.workdir, v, VARIANTS[v], kind, args.perturb, data)
    print(f"pytorch qwen35 comparison: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failed remat run or an unreadable file: one clear message
        print(f"pytorch qwen35 comparison failed: {e}", file=sys.stderr)
        sys.exit(1)
