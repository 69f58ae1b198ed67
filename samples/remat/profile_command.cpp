// `remat profile`: measures what each kernel family costs on the current device and writes the
// cost table `remat plan/train --costs FILE` read (CostModel::from_json), so `auto` decides from
// measurements instead of the default FLOP/byte rates.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "base/regular_file.h"
#include "cli_args.h"
#include "commands.h"
#include "device_args.h"
#include "model_args.h"
#include "runtime/session.h"
#include "runtime/vulkan/device.h"
#include "step_timing.h"

namespace remat::cli {
namespace {

CommandSpec spec() {
  CommandSpec c{
      "profile", "[MODEL]", 1,
      "Runs W warm-up and N measured steps of the model on the default Vulkan device with GPU\n"
      "timestamps, and writes per kernel family the rates that reproduce the measured times:\n"
      "flops_per_s = FLOPs / time and bytes_per_s = bytes / time over the family's steps (after a\n"
      "fixed launch cost, the fastest dispatch seen), in the format\n"
      "  {\"default\": {rate}, \"kernels\": {\"matmul\": {\"flops_per_s\": ..., \"bytes_per_s\": "
      "...,\n"
      "   \"launch_s\": ...}, ...}}\n"
      "that `remat plan --costs COSTS.json` and `remat train --costs COSTS.json` read. Profile "
      "the\n"
      "model and shape you will plan: rates depend on shapes.\n",
      without(without(model_flags(), "--costs"), "--memory")};
  c.flags.insert(c.flags.begin(),
                 {"--out", "COSTS.json", "where to write the cost table (required)", ""});
  c.flags.push_back({"--steps", "N", "measured steps", "3"});
  c.flags.push_back({"--warmup", "W", "unmeasured steps before them", "1"});
  return c;
}

struct Options {
  ModelSelection sel;
  std::filesystem::path out;
  int steps = 3;
  int warmup = 1;
};

Options parse(const std::vector<std::string>& argv) {
  Args a(argv, spec());
  Options o;
  o.sel = parse_model_selection(a);
  auto out = a.get("--out");
  if (!out) throw UsageError("--out COSTS.json is required (where to write the cost table)");
  o.out = *out;
  std::error_code ec;
  if (std::filesystem::is_directory(o.out, ec))
    throw UsageError(o.out.string() + ": is a directory; --out needs a file path");
  require_replaceable_file(o.out);  // before the minutes of measuring, not after
  const auto dir = o.out.has_parent_path() ? o.out.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(dir.string() + ": no such folder for --out");
  o.steps = static_cast<int>(a.get_int_or_default("--steps", 1, 1000000));
  o.warmup = static_cast<int>(a.get_int_or_default("--warmup", 0, 1000000));
  return o;
}

struct Family {
  double ms = 0, flops = 0, bytes = 0;
  int steps = 0, dispatches = 0;
};

}  // namespace

int run_profile(const std::vector<std::string>& args) {
  if (print_help_if_requested(args, spec())) return 0;
  const Options o = parse(args);
  auto device = open_device(o.sel.device_profile);
  std::printf("device   %s\n", device->summary().c_str());
  SessionConfig cfg;
  cfg.model = o.sel.model;
  cfg.shape = o.sel.shape;
  cfg.policy = o.sel.policy;
  cfg.arena_budget = o.sel.arena;
  cfg.choose_loss_chunk = o.sel.choose_loss_chunk;
  cfg.timestamps = true;
  Session session(*device, cfg);
  std::printf("model    %s: %s; batch %d x seq %d; policy %s; %d warm-up + %d measured steps\n",
              o.sel.model_name.c_str(), model_shape_text(cfg.model).c_str(), cfg.shape.batch,
              cfg.shape.seq, session.plan().policy.to_string().c_str(), o.warmup, o.steps);
  std::fflush(stdout);
  const Measurement meas = measure_session(session, o.warmup, o.steps);

  // Launch cost: the fastest single-dispatch step (it is at least the fixed cost of a dispatch).
  double launch_ms = std::numeric_limits<double>::infinity();
  std::map<OpKind, Family> fam;
  Family all;
  for (const StepTime& s : meas.steps) {
    if (s.dispatches == 1) launch_ms = std::min(launch_ms, s.ms);
    Family& f = fam[s.kind];
    f.ms += s.ms, f.flops += s.step->flops, f.bytes += s.step->bytes;
    ++f.steps, f.dispatches += s.dispatches;
  }
  if (!std::isfinite(launch_ms)) launch_ms = 0;
  // Keep at least half of each family's time for its work, so rates stay finite and positive.
  auto rate = [&](JsonWriter& j, const Family& f) {
    const double work_s = std::max(f.ms - f.steps * launch_ms, 0.5 * f.ms) / 1000;
    const double huge = 1e18;  // a family with no FLOPs (or bytes) is never bound by them
    j.begin_object()
        .field("flops_per_s", f.flops > 0 && work_s > 0 ? f.flops / work_s : huge)
        .field("bytes_per_s", f.bytes > 0 && work_s > 0 ? f.bytes / work_s : huge)
        .field("launch_s", std::min(launch_ms, f.ms / std::max(f.steps, 1)) / 1000)
        .end_object();
  };
  for (const auto& [k, f] : fam) {
    all.ms += f.ms, all.flops += f.flops, all.bytes += f.bytes;
    all.steps += f.steps, all.dispatches += f.dispatches;
  }
  JsonWriter j;
  j.begin_object().key("default");
  rate(j, all);
  j.key("kernels").begin_object();
  for (const auto& [k, f] : fam) {
    j.key(op_kind_name(k));
    rate(j, f);
  }
  j.end_object().end_object();

  write_file_atomically(o.out, j.str() + "\n");

  std::printf("\n%-24s %5s %10s %10s %10s %10s\n", "kernel family", "steps", "ms", "GFLOP/s",
              "GB/s", "share");
  std::vector<std::pair<OpKind, Family>> sorted(fam.begin(), fam.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  for (const auto& [k, f] : sorted)
    std::printf("%-24s %5d %10.3f %10.3f %10.3f %9.1f%%\n", std::string(op_kind_name(k)).c_str(),
                f.steps, f.ms, f.flops / (f.ms * 1e6), f.bytes / (f.ms * 1e6), 100 * f.ms / all.ms);
  std::printf("step     %.1f ms wall, %.1f ms in timed dispatches; launch cost %.4f ms\n",
              meas.median_wall_ms, meas.median_gpu_ms, launch_ms);
  std::printf("wrote    %s (use: remat plan --costs %s)\n", o.out.string().c_str(),
              o.out.string().c_str());
  return 0;
}

}  // namespace remat::cli
