#!/usr/bin/env python3
"""Soak: train `tiny` for many steps with the validation layer on, then check from the JSON log
that device allocations never changed, host memory stayed flat, and the layer said nothing.

    /usr/bin/python3 samples/soak.py --remat build/bin/remat --steps 1000

A benchmark-style check to run on demand (it takes a while on lavapipe), not part of CI.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--remat", default="build/bin/remat")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--data", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--arena", default="5MiB")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "soak.jsonl")
        cmd = [args.remat, "train", "tiny", "--data", args.data, "--arena", args.arena,
               "--steps", str(args.steps), "--lr", "1e-3", "--grad-clip", "1", "--quiet",
               "--log-json", log]
        env = dict(os.environ, REMAT_VALIDATION="1")
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            sys.exit("soak: remat train failed with status %d" % run.returncode)
        rows = [json.loads(line) for line in open(log)]
    steps = [r for r in rows if "step" in r]
    summary = rows[-1]

    device = {r["device_bytes_allocated"] for r in steps}
    # RSS after warm-up (pipelines compiled, caches filled) against the end of the run.
    warm = steps[min(49, len(steps) - 1)]["host_rss_bytes"]
    last = steps[-1]["host_rss_bytes"]
    peak = max(r["host_rss_bytes"] for r in steps)
    ms = sorted(r["ms"] for r in steps)
    print("soak: %d steps, loss %.4f -> %.4f" % (len(steps), steps[0]["loss"], steps[-1]["loss"]))
    print("soak: device bytes allocated per step: %s (plan %d)"
          % (sorted(device), summary["planned_total_bytes"]))
    print("soak: host RSS at step 50 %.1f MiB, at the end %.1f MiB (growth %+.2f MiB), peak %.1f MiB"
          % (warm / 2**20, last / 2**20, (last - warm) / 2**20, peak / 2**20))
    print("soak: median step %.1f ms, p95 %.1f ms" % (ms[len(ms) // 2], ms[int(len(ms) * 0.95)]))
    print("soak: validation messages: %s" % summary["validation_messages"])
    ok = (len(device) == 1 and device == {summary["planned_total_bytes"]}
          and summary["validation_messages"] == 0 and last - warm < 4 * 2**20)
    print("soak: %s" % ("1 passed, 0 failed" if ok else "0 passed, 1 failed"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
