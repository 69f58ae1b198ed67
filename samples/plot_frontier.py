#!/usr/bin/python3
"""Plots the memory/time frontier `remat bench --sweep` measured.

usage: plot_frontier.py DIR/frontier.json [OUT.png]
       plot_frontier.py DIR/configs.json [OUT.png]

frontier.json: x the planned arena (MiB); y step time (ms). Measured points (one marker per
policy or auto budget), the planner's predicted curve (none's measured time x the predicted
ratio), and the textbook estimate (M_c, T_c/T_b = 1 + L/2I, for plans with a checkpoint interval)
dashed.
configs.json (`remat bench --sweep-configs`): x the whole session's device memory (MiB, as the
device ledger measured it: weights, gradients, AdamW moments, activations and the session's
buffers); y step time (ms). One line per configuration (full fine-tuning, LoRA, 16-bit weights
...), one point per --memory budget.
Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MIB = 1024.0 * 1024.0


def finish(fig, ax, doc, title, xlabel, out):
    m = doc["model"]
    ax.set_title("%s: %s (L%d C%d), B=%d T=%d\n%s" % (
        title, m["name"], m["layers"], m["dim"], doc["batch"], doc["seq"], doc["device"][:70]),
        fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("step time (ms, median)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    print("plot_frontier: wrote " + out)
    return 0


def plot_configs(doc, src, out):
    names = []
    for p in doc["points"]:
        if p["config"] not in names:
            names.append(p["config"])
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=100)
    drawn = 0
    for name in names:
        pts = sorted((p for p in doc["points"] if p["config"] == name and "median_step_ms" in p),
                     key=lambda p: p["device_bytes_allocated"])
        if pts:
            ax.plot([p["device_bytes_allocated"] / MIB for p in pts],
                    [p["median_step_ms"] for p in pts], "o-", ms=5, lw=1.2, label=name)
            drawn += 1
    if not drawn:
        print("plot_frontier: no measured points in " + src, file=sys.stderr)
        return 1
    return finish(fig, ax, doc, "remat: whole-session memory vs step time",
                  "whole-session device memory (MiB, measured)", out)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = argv[1]
    out = argv[2] if len(argv) > 2 else src.rsplit("/", 1)[0] + "/frontier.png" if "/" in src else "frontier.png"
    with open(src) as f:
        doc = json.load(f)
    if any("config" in p for p in doc["points"]):
        return plot_configs(doc, src, out)
    pts = [p for p in doc["points"] if "median_step_ms" in p]
    if not pts:
        print("plot_frontier: no measured points in " + src, file=sys.stderr)
        return 1

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=100)
    auto = sorted((p for p in pts if p["policy"] == "auto"), key=lambda p: p["arena_bytes"])
    named = [p for p in pts if p["policy"] != "auto"]

    # Predicted: auto's frontier as a curve (none's measured time x the planner's predicted ratio),
    # named policies' predictions as crosses.
    pred = [p for p in auto if p.get("predicted_ms") is not None]
    if pred:
        ax.plot([p["arena_bytes"] / MIB for p in pred], [p["predicted_ms"] for p in pred],
                "-", color="tab:gray", lw=1.2, label="planner prediction (auto)")
    npred = [p for p in named if p.get("predicted_ms") is not None]
    if npred:
        ax.plot([p["arena_bytes"] / MIB for p in npred], [p["predicted_ms"] for p in npred],
                "x", color="tab:gray", ms=7, label="planner prediction (named policy)")
    if auto:
        ax.plot([p["arena_bytes"] / MIB for p in auto], [p["median_step_ms"] for p in auto],
                "o", color="tab:blue", ms=6, label="measured, auto under a budget")
    markers = "sD^vP*X"
    for i, p in enumerate(named):
        ax.plot(p["arena_bytes"] / MIB, p["median_step_ms"], markers[i % len(markers)],
                color="tab:orange", ms=7)
        ax.annotate(p["label"], (p["arena_bytes"] / MIB, p["median_step_ms"]),
                    textcoords="offset points", xytext=(5, 4), fontsize=8)
    if named:
        ax.plot([], [], "s", color="tab:orange", label="measured, named policy")

    # Textbook: M_a with time 1x for none, (M_c, T_c/T_b) for plans with an interval.
    none_ms = doc.get("none_median_step_ms")
    book = []
    for p in pts:
        t = p.get("textbook", {})
        if p["policy"] == "none" and none_ms:
            book.append((t["M_a_bytes"] / MIB, none_ms))
        elif t.get("M_c_bytes") is not None and t.get("ms") is not None:
            book.append((t["M_c_bytes"] / MIB, t["ms"]))
    book = sorted(set(book))
    if book:
        ax.plot([b[0] for b in book], [b[1] for b in book], "--", color="tab:green", lw=1.2,
                marker=".", label="textbook (2HSLBb, 1 + L/2I)")

    return finish(fig, ax, doc, "remat frontier", "activation arena (MiB)", out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
