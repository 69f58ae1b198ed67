#!/usr/bin/python3
"""remat beside its peers on one Llama shape: remat on the default Vulkan device, llama.cpp on the
same device through its Vulkan backend and on its CPU backend, and PyTorch CPU (run on demand,
not in CI; docs/benchmarks.md keeps one run).

usage: /usr/bin/python3 samples/compare_peers.py --build build [--models llama-tiny,smollm2-135m:4]
           [--seq 256] [--steps 3] [--warmup 1] [--threads 1,2] [--no-vulkan]

Every peer runs the same model (random weights; an F32 GGUF that build/bin/remat_random_gguf_model
writes for llama.cpp, the preset with --layers for remat, the same shapes in PyTorch) on one
sequence of --seq tokens a step (llama.cpp's training takes one sequence per optimizer step),
full fine-tuning with AdamW, and reports the median step time and the forward time:
  - remat: `remat bench MODEL --batch 1 --seq T --policy none`, its median step and the GPU time
    of its forward steps (loss included);
  - llama.cpp: build/bin/remat_llama_cpp_peer (llama_opt_init / llama_opt_epoch, as llama.cpp's
    examples/training does; forward = llama_decode of the sequence, logits of the last token);
  - PyTorch CPU float32: forward, backward and torch.optim.AdamW; forward = the forward and loss
    without gradients. Each thread count in --threads; the best is reported.
MODEL:L keeps the preset's first L layers. llama.cpp's libraries come from npm's node-llama-cpp
packages (pinned 3.21.1, as .ci/fetch-test-data fetches the CPU one); the Vulkan one is fetched
into build-data/npm on first use. lavapipe is visible to ggml's Vulkan backend only with
GGML_VK_VISIBLE_DEVICES=0, which this script sets.
"""
import argparse
import json
import math
import multiprocessing
import os
import queue
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NPM = os.path.join(ROOT, "build-data", "npm", "node_modules", "@node-llama-cpp")
PIN = "3.21.1"

# name: (layers, dim, heads, kv_heads, ffn, vocab, rope_theta, eps, tied); graph/model_config.cpp
SHAPES = {
    "llama-tiny": (4, 128, 4, 2, 352, 256, 10000.0, 1e-5, False),
    "smollm2-135m": (30, 576, 9, 3, 1536, 49152, 100000.0, 1e-5, True),
    "qwen2.5-0.5b": (24, 896, 14, 2, 4864, 151936, 1000000.0, 1e-6, True),
}


def llama_cpp_lib(kind):
    """libllama of node-llama-cpp's linux-x64 (CPU) or linux-x64-vulkan package."""
    pkg = "linux-x64" if kind == "cpu" else "linux-x64-vulkan"
    name = "libllama.v0.4.0.so" if kind == "cpu" else "libllama.vulkan.v0.4.0.so"
    lib = os.path.join(NPM, pkg, "bins", pkg, name)
    if os.path.exists(lib):
        return lib
    if kind == "cpu":
        sys.exit("remat: error: %s is missing; run .ci/fetch-test-data" % lib)
    with tempfile.TemporaryDirectory() as tmp:
        print("fetching  @node-llama-cpp/%s@%s from npm" % (pkg, PIN), flush=True)
        out = subprocess.run(["npm", "pack", "@node-llama-cpp/%s@%s" % (pkg, PIN)], cwd=tmp,
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("remat: error: npm pack @node-llama-cpp/%s failed: %s" % (pkg, out.stderr))
        with tarfile.open(os.path.join(tmp, out.stdout.strip().splitlines()[-1])) as t:
            t.extractall(tmp)
        os.makedirs(os.path.dirname(os.path.join(NPM, pkg)), exist_ok=True)
        os.rename(os.path.join(tmp, "package"), os.path.join(NPM, pkg))
    return lib


def remat_point(build, preset, layers, seq, steps, warmup, out):
    cmd = [os.path.join(build, "bin", "remat"), "bench", preset, "--layers", str(layers),
           "--batch", "1", "--seq", str(seq), "--ctx", str(seq), "--policy", "none",
           "--steps", str(steps), "--warmup", str(warmup), "--out", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "frontier.json")) as f:
        p = json.load(f)["points"][0]
    return p["median_step_ms"], p["forward_gpu_ms"]


def llama_cpp_point(build, gguf, kind, threads, steps, warmup):
    env = dict(os.environ, GGML_VK_VISIBLE_DEVICES="0")
    cmd = [os.path.join(build, "bin", "remat_llama_cpp_peer"), llama_cpp_lib(kind), gguf,
           "--threads", str(threads), "--steps", str(steps), "--warmup", str(warmup)]
    if kind == "vulkan":
        cmd.append("--gpu")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["step_ms"], r["forward_ms"]


def torch_point(shape, seq, threads, steps, warmup, queue):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    L, C, H, KV, FF, V, theta, eps, tied = shape
    D = C // H

    def p(*s):
        return torch.nn.Parameter(torch.randn(*s) * 0.02)

    params = {"wte": p(V, C), "norm": torch.nn.Parameter(torch.ones(C))}
    if not tied:
        params["head"] = p(V, C)
    for i in range(L):
        for n, s in (("q", (H * D, C)), ("k", (KV * D, C)), ("v", (KV * D, C)), ("o", (C, H * D)),
                     ("gate", (FF, C)), ("up", (FF, C)), ("down", (C, FF))):
            params["%d.%s" % (i, n)] = p(*s)
        params["%d.n1" % i] = torch.nn.Parameter(torch.ones(C))
        params["%d.n2" % i] = torch.nn.Parameter(torch.ones(C))
    inv = 1.0 / theta ** (torch.arange(0, D, 2).float() / D)
    ang = torch.outer(torch.arange(seq).float(), inv)
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    mask = torch.ones(seq, seq, dtype=torch.bool).tril()

    def norm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def rope(x):
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def loss_of(tokens, targets):
        x = params["wte"][tokens]
        for i in range(L):
            h = norm(x, params["%d.n1" % i])
            q = (h @ params["%d.q" % i].t()).view(1, seq, H, D).transpose(1, 2)
            k = (h @ params["%d.k" % i].t()).view(1, seq, KV, D).transpose(1, 2)
            v = (h @ params["%d.v" % i].t()).view(1, seq, KV, D).transpose(1, 2)
            k, v = (z.repeat_interleave(H // KV, 1) for z in (k, v))
            att = (rope(q) @ rope(k).transpose(-2, -1)) / math.sqrt(D)
            a = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
            x = x + a.transpose(1, 2).reshape(1, seq, C) @ params["%d.o" % i].t()
            h = norm(x, params["%d.n2" % i])
            g = F.silu(h @ params["%d.gate" % i].t()) * (h @ params["%d.up" % i].t())
            x = x + g @ params["%d.down" % i].t()
        logits = norm(x, params["norm"]) @ params.get("head", params["wte"]).t()
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    tokens = torch.randint(0, V, (1, seq))
    targets = torch.randint(0, V, (1, seq))
    opt = torch.optim.AdamW(params.values(), lr=1e-4, weight_decay=0.0)
    step_ms, fwd_ms = [], []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_of(tokens, targets).backward()
        opt.step()
        t1 = time.perf_counter()
        with torch.no_grad():
            loss_of(tokens, targets)
        t2 = time.perf_counter()
        if i >= warmup:
            step_ms.append((t1 - t0) * 1e3)
            fwd_ms.append((t2 - t1) * 1e3)
    queue.put((statistics.median(step_ms), statistics.median(fwd_ms)))


def in_child(f, *args):
    """f(*args, queue) in a fresh process: PyTorch's thread pool keeps its first size."""
    q = multiprocessing.Queue()
    proc = multiprocessing.Process(target=f, args=args + (q,))
    proc.start()
    proc.join()
    try:
        return q.get(timeout=10)  # a small tuple: the child's pipe never blocked its exit
    except queue.Empty:
        sys.exit("remat: error: the PyTorch run failed (exit %s)" % proc.exitcode)


def best(points):
    return min(points, key=lambda r: r[1][0])


def compare(args, name, layers):
    shape = (layers,) + SHAPES[name][1:]
    ms = {}
    with tempfile.TemporaryDirectory() as tmp:
        gguf = os.path.join(tmp, "model.gguf")
        subprocess.run([os.path.join(args.build, "bin", "remat_random_gguf_model"),
                        "%s,ctx=%d" % (name, args.seq), gguf, "F32", str(layers)], check=True,
                       stdout=subprocess.DEVNULL)
        print("running   remat (Vulkan default device)", flush=True)
        ms["remat"] = remat_point(args.build, name, layers, args.seq, args.steps, args.warmup,
                                  os.path.join(tmp, "bench"))
        if not args.no_vulkan:
            print("running   llama.cpp (Vulkan, GGML_VK_VISIBLE_DEVICES=0)", flush=True)
            try:
                ms["llama.cpp Vulkan"] = llama_cpp_point(args.build, gguf, "vulkan", 1,
                                                         args.steps, args.warmup)
            except subprocess.CalledProcessError as e:
                # Mesa 22.3's lavapipe sometimes crashes in its worker threads on ggml's shaders.
                print("llama.cpp Vulkan failed (exit %d); left out of the table" % e.returncode,
                      flush=True)
        runs = []
        for t in args.threads:
            print("running   llama.cpp CPU, %d threads" % t, flush=True)
            runs.append((t, llama_cpp_point(args.build, gguf, "cpu", t, args.steps, args.warmup)))
        t, point = best(runs)
        ms["llama.cpp CPU (%d thr)" % t] = point
    runs = []
    for t in args.threads:
        print("running   PyTorch CPU, %d threads" % t, flush=True)
        runs.append((t, in_child(torch_point, shape, args.seq, t, args.steps, args.warmup)))
    t, point = best(runs)
    ms["PyTorch CPU (%d thr)" % t] = point
    return shape, ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="llama-tiny,smollm2-135m:4")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--no-vulkan", action="store_true", help="skip llama.cpp's Vulkan backend")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    if args.seq % 256:
        sys.exit("remat: error: --seq must be a multiple of 256 (llama.cpp pads its context)")
    for spec in args.models.split(","):
        name, _, layers = spec.partition(":")
        if name not in SHAPES:
            sys.exit("remat: error: unknown model %s; use one of %s" % (name, ", ".join(SHAPES)))
        layers = int(layers) if layers else SHAPES[name][0]
        shape, ms = compare(args, name, layers)
        print("\n%s, %d layers, 1 x %d tokens a step, full fine-tuning, AdamW" %
              (name, layers, args.seq))
        print("| peer | step ms | trained tokens/s | step / remat | forward ms | forward / remat |")
        print("|---|---|---|---|---|---|")
        r_step, r_fwd = ms["remat"]
        for peer, (step, fwd) in ms.items():
            print("| %s | %.1f | %.0f | %.2f | %.1f | %.2f |" %
                  (peer, step, args.seq / step * 1e3, step / r_step, fwd, fwd / r_fwd))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
