#!/usr/bin/python3
"""A stand-in for the `remat` commands pytorch_qwen35_training.py runs (plan, tokenize, train),
computing the training steps with the reference itself in float32 PyTorch: a float32
implementation that is right up to rounding. Passing it through the comparison measures how much
of the tolerances float32 arithmetic uses; with the comparison's --perturb, every run must still
fail. Not registered in CTest (minutes of CPU): run by hand, e.g.

  tests/training/pytorch_qwen35_training.py --remat tests/training/qwen35_float32_standin.py \\
      --workdir /tmp/q35standin

QWEN35_STANDIN_DTYPE=f64 computes in float64 instead. plan answers fixed arena sizes (it
plans nothing); train reads only the flags the comparison gives.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_qwen35_training as harness  # noqa: E402

ref, common, torch = harness.ref, harness.common, harness.torch
DTYPE = torch.float64 if os.environ.get("QWEN35_STANDIN_DTYPE") == "f64" else torch.float32
FLAGS = {"--pack", "--quiet", "--json"}  # flags without a value


def options(argv):
    out, i = {}, 0
    while i < len(argv):
        if argv[i] in FLAGS:
            out[argv[i]] = True
            i += 1
        elif argv[i].startswith("--"):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            out.setdefault("", argv[i])
            i += 1
    return out


def model_config(folder):
    c = json.load(open(os.path.join(folder, "config.json")))
    rope = c["rope_parameters"]
    cfg = dict(hidden=c["hidden_size"], ffn=c["intermediate_size"], vocab=c["vocab_size"],
               k_heads=c["linear_num_key_heads"], v_heads=c["linear_num_value_heads"],
               dk=c["linear_key_head_dim"], dv=c["linear_value_head_dim"],
               conv=c["linear_conv_kernel_dim"], heads=c["num_attention_heads"],
               kv_heads=c["num_key_value_heads"], head_dim=c["head_dim"],
               partial_rotary_factor=rope["partial_rotary_factor"],
               rope_theta=rope["rope_theta"], eps=c["rms_norm_eps"],
               layers=c["num_hidden_layers"], interval=c["full_attention_interval"],
               tied=c["tie_word_embeddings"])
    return c, cfg


def train(o):
    config, cfg = model_config(o["--init"])
    weights = common.read_safetensors(os.path.join(o["--init"], "model.safetensors"))
    steps = int(o["--steps"])
    if o.get("--pack"):
        batches = harness.packed_rows(None)
    else:
        data = open(o["--data"], "rb").read()
        batches = [harness.text_rows(data, s) for s in range(steps)]
    adamw = (float(o["--lr"]), float(o["--wd"]), (float(o["--beta1"]), float(o["--beta2"])),
             float(o["--eps"]), float(o["--grad-clip"]))
    if "--lora-init" in o:
        trained = common.read_safetensors(
            os.path.join(o["--lora-init"], "adapter_model.safetensors"))
        base = {n: w.to(DTYPE) for n, w in weights.items()}
        loss_of = lambda L, rows: ref.loss(ref.adapted(base, L, harness.ALPHA / harness.RANK),
                                           cfg, rows)
    else:
        trained, loss_of = weights, lambda P, rows: ref.loss(P, cfg, rows)
    trained = {n: w.to(torch.float32) for n, w in trained.items()}
    losses, norms, final, _ = ref.adamw_run(trained, batches, loss_of, *adamw, dtype=DTYPE)
    with open(o["--log-json"], "w") as f:
        for s in range(steps):
            f.write(json.dumps({"step": s + 1, "loss": losses[s], "grad_norm": norms[s]}) + "\n")
        f.write(json.dumps({"summary": True, "policy": o.get("--policy", "arena")}) + "\n")
    out = o.get("--save") or o["--save-adapter"]
    os.makedirs(out, exist_ok=True)
    if "--save" in o:
        json.dump(config, open(os.path.join(out, "config.json"), "w"))
    name = "model.safetensors" if "--save" in o else "adapter_model.safetensors"
    common.write_safetensors(os.path.join(out, name),
                             sorted((n, t.to(torch.float32)) for n, t in final.items()), {})


def main():
    command, o = sys.argv[1], options(sys.argv[2:])
    if command == "plan":
        if o.get("--arena") == "1":
            print("remat: error: the minimum is 100 bytes", file=sys.stderr)
            return 2
        print(json.dumps({"arena_bytes": 1000}))
    elif command == "tokenize":
        for line in open(o["--jsonl"]):
            ids, mask = harness.example_tokens(json.loads(line))
            print(json.dumps({"ids": ids, "mask": mask}))
    else:
        torch.set_default_dtype(DTYPE)
        train(o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
