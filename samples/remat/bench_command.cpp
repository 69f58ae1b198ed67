// `remat bench`: measures the memory/time frontier of checkpointing on the default Vulkan device
// (arena budgets from store-everything down to the smallest feasible plan, plus each named
// policy), next to the planner's prediction and the textbook estimate; or, with --kernels, every
// kernel of a GPT-2-small step against the device's measured peak FMA rate and copy bandwidth.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "bench_kernels.h"
#include "bench_options.h"
#include "bench_report.h"
#include "cli_args.h"
#include "commands.h"
#include "config_sweep.h"
#include "device_args.h"
#include "graph/weight_dtype.h"
#include "model_args.h"
#include "plot_script.h"
#include "runtime/kernels/roofline.h"
#include "runtime/session.h"
#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/executor.h"
#include "runtime/vulkan/kernel_cache.h"
#include "step_timing.h"

namespace remat::cli {
namespace {

CommandSpec spec() {
  CommandSpec c{
      "bench", "[MODEL]", 1,
      "Runs W warm-up and N measured training steps on deterministic synthetic tokens and reports\n"
      "the median step time, tokens/s, planned arena, device bytes allocated, liveness lower\n"
      "bound, measured and predicted time relative to policy none, the textbook estimate, and the\n"
      "host time per step outside timed GPU work.\n"
      "  (default)  one point: --arena SIZE (auto) or --policy P\n"
      "  --sweep    policies none, every:1, every:2, sqrt, selective, and auto at 8 arena budgets\n"
      "             from none's arena down to the minimum; writes DIR/frontier.csv,\n"
      "             DIR/frontier.json and, with python3 + matplotlib, DIR/frontier.png\n"
      "  --sweep-configs  full fine-tuning, LoRA r8 and 16-bit configurations, each under\n"
      "             --memory budgets from storing everything down to its minimum: one plot of\n"
      "             whole-session memory against step time (DIR/configs.csv, .json, .png)\n"
      "  --kernels  per kernel of one step at GPT-2-small shapes (default gpt2 --layers 1\n"
      "             --batch 4 --seq 64): time, GFLOP/s, GB/s and fraction of the device's\n"
      "             measured peak (peak_fma, peak_copy); writes DIR/kernels.csv\n"
      "Matmul register tiles are timed on this device at their first use and remembered next\n"
      "to the pipeline cache; REMAT_MATMUL_TUNING=off keeps the device's default tiles (the\n"
      "same on every run). Tiles never change results.\n",
      model_flags()};
  const std::vector<FlagSpec> bench = {
      {"--steps", "N", "measured steps per point", "3"},
      {"--warmup", "W", "unmeasured steps before them", "1"},
      {"--out", "DIR", "folder for the CSV, JSON and plot", "bench-out"},
      {"--sweep", "", "measure the whole memory/time frontier", ""},
      {"--kernels", "", "measure every kernel of one step against the device's peak", ""},
      {"--repeats", "R", "with --kernels: repetitions of each peak measurement", "5"},
      {"--no-plot", "", "with --sweep or --sweep-configs: do not draw the PNG", ""},
      {"--sweep-configs", "",
       "full fine-tuning, LoRA and 16-bit configurations under --memory budgets on one plot of "
       "whole-session memory against step time (DIR/configs.csv, .json, .png)",
       ""},
      {"--points", "N", "with --sweep-configs: --memory budgets per configuration", "4"},
  };
  for (FlagSpec& f : lora_flags()) c.flags.push_back(std::move(f));
  c.flags.insert(c.flags.end(), bench.begin(), bench.end());
  return c;
}

bool takes_value(const CommandSpec& c, const std::string& name) {
  for (const FlagSpec& f : c.flags)
    if (f.name == name) return !f.value.empty();
  return false;
}

bool has_flag(const std::vector<std::string>& argv, const std::string& flag) {
  for (const auto& a : argv)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

BenchOptions parse(std::vector<std::string> argv) {
  const CommandSpec c = spec();
  if (has_flag(argv, "--kernels")) {
    // GPT-2-small shapes by default; one block has every kernel of the twelve.
    bool positional_model = false;
    for (std::size_t i = 0; i < argv.size(); ++i) {
      if (argv[i].rfind("--", 0) == 0) {
        if (takes_value(c, argv[i])) ++i;
        continue;
      }
      positional_model = true;
    }
    if (!positional_model && !has_flag(argv, "--model")) argv.insert(argv.begin(), "gpt2");
    if (!has_flag(argv, "--layers")) argv.insert(argv.end(), {"--layers", "1"});
    if (!has_flag(argv, "--seq")) argv.insert(argv.end(), {"--seq", "64"});
  }
  Args a(argv, c);
  BenchOptions o;
  o.sel = parse_model_selection(a);
  o.lora = parse_lora_flags(a);
  try {
    check_weight_dtype(o.sel.shape.weight_dtype, o.lora.enabled());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  o.steps = static_cast<int>(a.get_int_or_default("--steps", 1, 1000000));
  o.warmup = static_cast<int>(a.get_int_or_default("--warmup", 0, 1000000));
  o.repeats = static_cast<int>(a.get_int_or_default("--repeats", 1, 1000));
  o.sweep = a.has("--sweep");
  o.kernels = a.has("--kernels");
  o.configs = a.has("--sweep-configs");
  o.plot = !a.has("--no-plot");
  o.points = static_cast<int>(a.get_int_or_default("--points", 1, 64));
  if (int(o.sweep) + int(o.kernels) + int(o.configs) > 1)
    throw UsageError("give one of --sweep, --sweep-configs and --kernels");
  const char* mode = o.sweep ? "--sweep" : o.configs ? "--sweep-configs" : "--kernels";
  if ((o.sweep || o.kernels || o.configs) &&
      (a.get("--arena") || a.get("--policy") || a.get("--memory")))
    throw UsageError(std::string(mode) +
                     " chooses the policies itself; drop --arena/--policy/--memory");
  if (o.configs && o.lora.enabled())
    throw UsageError("--sweep-configs sets --lora per configuration; drop --lora");
  if (a.get("--points") && !o.configs) throw UsageError("--points goes with --sweep-configs");
  if (a.get("--repeats") && !o.kernels) throw UsageError("--repeats goes with --kernels");
  o.out = a.get_or_default("--out");
  std::error_code ec;
  if (std::filesystem::exists(o.out, ec) && !std::filesystem::is_directory(o.out, ec))
    throw UsageError(o.out.string() + ": exists and is not a folder; give --out a folder");
  return o;
}

// ---------------------------------------------------------------------------------------------
// The frontier

BenchPoint run_point(Device& device, const BenchOptions& o, const std::string& label,
                     const Policy& policy, std::optional<uint64_t> budget) {
  BenchPoint p{label, policy, budget, std::nullopt, {}, {}, ""};
  SessionConfig cfg;
  cfg.model = o.sel.model;
  cfg.lora = o.lora;
  cfg.shape = o.sel.shape;
  cfg.policy = policy;
  cfg.arena_budget = budget;
  cfg.memory_budget = o.sel.memory;
  cfg.choose_loss_chunk = o.sel.choose_loss_chunk;
  cfg.costs = o.sel.costs ? &*o.sel.costs : nullptr;
  cfg.timestamps = true;
  try {
    Session session(device, cfg);
    p.plan = session.plan();
    p.memory = session.memory();
    p.loss_chunk = session.config().shape.loss_chunk;
    p.m = measure_session(session, o.warmup, o.steps);
  } catch (const std::invalid_argument& e) {
    p.plan.reset();
    p.error = e.what();
  }
  return p;
}

// Budgets from `hi` down to `lo`, geometric, `n` points (both ends included).
std::vector<uint64_t> budgets(uint64_t hi, uint64_t lo, int n) {
  std::vector<uint64_t> out;
  if (hi <= lo) return {lo};
  for (int k = 0; k < n; ++k) {
    const double f = double(k) / double(n - 1);
    auto b = static_cast<uint64_t>(std::llround(double(hi) * std::pow(double(lo) / double(hi), f)));
    b = std::clamp(b, lo, hi);
    if (k == n - 1) b = lo;
    if (out.empty() || out.back() != b) out.push_back(b);
  }
  return out;
}

// The largest budget of the sweep: none's arena, or what the device has left after the model
// when that is less (a budget the device cannot hold only repeats none's error).
uint64_t sweep_top(const Device& device, const Plan& none) {
  const uint64_t device_bytes = device.info().device_local_bytes();
  if (device_bytes > none.persistent_bytes)
    return std::min(none.arena_bytes, device_bytes - none.persistent_bytes);
  return none.arena_bytes;
}

int run_frontier(BenchOptions o) {
  auto device = open_device(o.sel.device_profile);
  std::printf("device   %s\n", device->summary().c_str());
  // The sweep's budgets are planned at one chunk: the one a session on this device picks.
  resolve_loss_chunk(o.sel, o.lora, session_alignment(*device),
                     device->plan().quirks.max_binding_bytes);
  const ModelConfig& m = o.sel.model;
  std::string extras;
  if (o.sel.shape.loss_chunk > 0)
    extras += "; loss in chunks of " + std::to_string(o.sel.shape.loss_chunk) + " rows";
  if (o.lora.enabled()) extras += "; LoRA r " + std::to_string(o.lora.rank);
  std::printf("model    %s: %s; batch %d x seq %d%s; %d warm-up + %d measured steps per point\n",
              o.sel.model_name.c_str(), model_shape_text(m).c_str(), o.sel.shape.batch,
              o.sel.shape.seq, extras.c_str(), o.warmup, o.steps);
  std::fflush(stdout);

  std::vector<BenchPoint> pts;
  auto add = [&](const std::string& label, const Policy& p, std::optional<uint64_t> budget) {
    std::printf("running  %s ...", label.c_str());
    std::fflush(stdout);
    pts.push_back(run_point(*device, o, label, p, budget));
    if (pts.back().plan)
      std::printf(" %.2f ms/step\n", pts.back().m.median_wall_ms);
    else
      std::printf(" %s\n", pts.back().error.c_str());
    std::fflush(stdout);
  };
  if (!o.sweep) {
    const std::string label =
        o.sel.arena    ? "auto@" + format_bytes(*o.sel.arena)
        : o.sel.memory ? o.sel.policy.to_string() + "@memory " + format_bytes(*o.sel.memory)
                       : o.sel.policy.to_string();
    add(label, o.sel.policy, o.sel.arena);
    if (o.sel.policy.kind != Policy::Kind::none) add("none", Policy{}, std::nullopt);
  } else {
    for (const char* name : {"none", "every:1", "every:2", "sqrt", "selective"})
      add(name, Policy::parse(name), std::nullopt);
    const uint64_t align = session_alignment(*device);
    const CostModel* costs = o.sel.costs ? &*o.sel.costs : nullptr;
    const uint64_t lo = minimum_arena_bytes(m, o.sel.shape, align, costs, o.lora);
    const Plan none = plan(m, o.sel.shape, Policy{}, std::nullopt, align, costs, o.lora);
    for (uint64_t b : budgets(sweep_top(*device, none), lo, 8))
      add("auto@" + format_bytes(b), Policy{Policy::Kind::automatic, 0}, b);
  }
  const Baseline none = baseline(pts);
  print_table(o, pts, none);

  std::filesystem::create_directories(o.out);
  const auto csv_path = o.out / "frontier.csv", json_path = o.out / "frontier.json";
  write_file_atomically(csv_path, csv(o, pts, none));
  write_file_atomically(json_path, json(o, *device, pts, none));
  std::printf("wrote    %s, %s\n", csv_path.string().c_str(), json_path.string().c_str());
  if (o.sweep && o.plot) make_plot("plot_frontier.py", json_path, o.out / "frontier.png");
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Kernels against the roofline

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  if (print_help_if_requested(args, spec())) return 0;
  const BenchOptions o = parse(args);
  if (o.configs) {
    std::vector<std::string> rest;
    for (const std::string& arg : args)
      if (arg != "--sweep-configs") rest.push_back(arg);
    return run_config_sweep(rest, spec(), {o.steps, o.warmup, o.points, o.plot, o.out});
  }
  return o.kernels ? run_bench_kernels(o) : run_frontier(o);
}

}  // namespace remat::cli
