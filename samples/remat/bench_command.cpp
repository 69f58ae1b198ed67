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
#include "cli_args.h"
#include "commands.h"
#include "config_sweep.h"
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

struct Options {
  ModelSelection sel;
  LoraSpec lora;  // --lora (rank 0: full fine-tuning)
  int steps = 3;
  int warmup = 1;
  int repeats = 5;
  bool sweep = false;
  bool kernels = false;
  bool plot = true;
  bool configs = false;  // --sweep-configs
  int points = 4;        // --points
  std::filesystem::path out;
};

bool has_flag(const std::vector<std::string>& argv, const std::string& flag) {
  for (const auto& a : argv)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

Options parse(std::vector<std::string> argv) {
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
  Options o;
  o.sel = parse_model_selection(a);
  o.lora = parse_lora_flags(a);
  choose_auto_loss_chunk(o.sel, o.lora);
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

struct Point {
  std::string label;               // "none", "every:2", "auto@12.0 MiB"
  Policy policy;                   // what was asked
  std::optional<uint64_t> budget;  // auto's budget
  std::optional<Plan> plan;        // absent when it could not be planned or run
  MemoryReport memory;
  Measurement m;
  std::string error;
  int loss_chunk = 0;  // the rows of logits the session held at a time (0: all)
};

Point run_point(Device& device, const Options& o, const std::string& label, const Policy& policy,
                std::optional<uint64_t> budget) {
  Point p{label, policy, budget, std::nullopt, {}, {}, ""};
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

double tokens_per_step(const Options& o) {
  return double(o.sel.shape.batch) * o.sel.shape.seq;
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

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The step time of policy `none`, against which every point's ratios are taken. Measured when
// none ran; when it does not fit the device (the case checkpointing exists for: GPT-2 on a 2 GiB
// device), estimated from the measured point with the least predicted recompute, as its time
// divided by its predicted ratio.
struct Baseline {
  double none_ms = NAN;
  std::string estimated_from;  // empty when none was measured
};

Baseline baseline(const std::vector<Point>& pts) {
  const Point* best = nullptr;
  for (const Point& p : pts) {
    if (!p.plan || !(p.m.median_wall_ms > 0)) continue;
    if (p.label == "none") return {p.m.median_wall_ms, ""};
    if (!best || p.plan->report.predicted_step_ratio < best->plan->report.predicted_step_ratio)
      best = &p;
  }
  if (!best) return {};
  return {best->m.median_wall_ms / best->plan->report.predicted_step_ratio, best->label};
}

struct Derived {
  double measured_ratio = NAN;  // median ms / none's ms
  double predicted_ms = NAN;    // none's ms x predicted ratio
  double textbook_ms = NAN;     // none's ms x T_c/T_b
  double host_fraction = NAN;   // host ms / wall ms
};

Derived derive(const Point& p, const Baseline& none) {
  Derived d;
  if (!p.plan) return d;
  d.host_fraction = p.m.median_wall_ms > 0 ? p.m.median_host_ms / p.m.median_wall_ms : NAN;
  if (none.none_ms > 0) {
    d.measured_ratio = p.m.median_wall_ms / none.none_ms;
    d.predicted_ms = none.none_ms * p.plan->report.predicted_step_ratio;
    if (p.plan->report.analytic.T_c_ratio)
      d.textbook_ms = none.none_ms * *p.plan->report.analytic.T_c_ratio;
  }
  return d;
}

// CSV cells: exact numbers (the JSON spelling), empty when absent or not finite.
std::string opt_num(std::optional<double> v) {
  return v && std::isfinite(*v) ? json_number(*v) : "";
}
std::string num_or_empty(double v) {
  return opt_num(v);
}
// RFC 4180: a cell with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (char c : text) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

constexpr const char* kCsvHeader =
    "label,policy,budget_bytes,arena_bytes,arena_lower_bound_bytes,persistent_bytes,"
    "planned_total_bytes,device_bytes_allocated,median_step_ms,tokens_per_s,gpu_ms,host_ms,"
    "host_fraction,measured_ratio,predicted_ratio,predicted_ms,recompute_flops,textbook_M_a_bytes,"
    "textbook_M_c_bytes,textbook_T_c_ratio,textbook_interval,textbook_ms,checkpoints,error";

std::string csv(const Options& o, const std::vector<Point>& pts, const Baseline& none) {
  std::string s = std::string(kCsvHeader) + "\n";
  for (const Point& p : pts) {
    const Derived d = derive(p, none);
    std::vector<std::string> f = {csv_cell(p.label),
                                  p.plan ? p.plan->policy.to_string() : p.policy.to_string(),
                                  p.budget ? std::to_string(*p.budget) : ""};
    if (p.plan) {
      const Report& r = p.plan->report;
      f.insert(f.end(), {std::to_string(p.plan->arena_bytes),
                         std::to_string(p.plan->arena_lower_bound),
                         std::to_string(p.plan->persistent_bytes),
                         std::to_string(p.memory.planned_total_bytes),
                         std::to_string(p.memory.device_bytes_allocated),
                         fmt("%.4f", p.m.median_wall_ms),
                         fmt("%.1f", tokens_per_step(o) / (p.m.median_wall_ms / 1000)),
                         fmt("%.4f", p.m.median_gpu_ms),
                         fmt("%.4f", p.m.median_host_ms),
                         num_or_empty(d.host_fraction),
                         num_or_empty(d.measured_ratio),
                         fmt("%.6g", r.predicted_step_ratio),
                         num_or_empty(d.predicted_ms),
                         json_number(r.recompute_flops),
                         json_number(r.analytic.M_a),
                         opt_num(r.analytic.M_c),
                         opt_num(r.analytic.T_c_ratio),
                         r.analytic.interval ? std::to_string(*r.analytic.interval) : "",
                         num_or_empty(d.textbook_ms),
                         csv_cell(joined(r.checkpoints, " ")),
                         ""});
    } else {
      f.resize(23);
      f.push_back(csv_cell(p.error));
    }
    s += joined(f, ",") + "\n";
  }
  return s;
}

std::string json(const Options& o, const Device& device, const std::vector<Point>& pts,
                 const Baseline& none) {
  JsonWriter j;
  const ModelConfig& m = o.sel.model;
  j.begin_object().field("device", device.summary());
  j.key("model")
      .begin_object()
      .field("name", o.sel.model_name)
      .field("layers", m.layers)
      .field("dim", m.dim)
      .field("heads", m.heads)
      .field("vocab", m.vocab)
      .field("ctx", m.ctx)
      .end_object();
  j.field("batch", o.sel.shape.batch)
      .field("seq", o.sel.shape.seq)
      .field("loss_chunk", o.sel.shape.loss_chunk)
      .field("lora_rank", o.lora.rank)
      .field("steps", o.steps)
      .field("warmup", o.warmup)
      .field("tokens_per_step", tokens_per_step(o));
  j.field("none_median_step_ms", if_finite(none.none_ms));
  j.key("none_estimated_from");
  none.estimated_from.empty() ? j.null() : j.value(none.estimated_from);
  j.key("points").begin_array();
  for (const Point& p : pts) {
    const Derived d = derive(p, none);
    j.begin_object().field("label", p.label);
    j.field("policy", p.plan ? p.plan->policy.to_string() : p.policy.to_string());
    j.field("budget_bytes", p.budget);
    if (!p.plan) {
      j.field("error", p.error).end_object();
      continue;
    }
    const Report& r = p.plan->report;
    j.field("arena_bytes", p.plan->arena_bytes)
        .field("arena_lower_bound_bytes", p.plan->arena_lower_bound)
        .field("persistent_bytes", p.plan->persistent_bytes)
        .field("planned_total_bytes", p.memory.planned_total_bytes)
        .field("device_bytes_allocated", p.memory.device_bytes_allocated)
        .field("loss_chunk", p.loss_chunk)
        .field("median_step_ms", p.m.median_wall_ms)
        .field("tokens_per_s", if_finite(tokens_per_step(o) / (p.m.median_wall_ms / 1000)))
        .field("gpu_ms", p.m.median_gpu_ms)
        .field("host_ms", p.m.median_host_ms)
        .field("host_fraction", if_finite(d.host_fraction))
        .field("measured_ratio", if_finite(d.measured_ratio))
        .field("predicted_ratio", r.predicted_step_ratio)
        .field("predicted_ms", if_finite(d.predicted_ms))
        .field("recompute_flops", r.recompute_flops);
    j.key("step_ms").begin_array();
    for (double v : p.m.wall_ms) j.value(v);
    j.end_array();
    j.key("checkpoints").begin_array();
    for (const auto& c : r.checkpoints) j.value(c);
    j.end_array();
    j.key("textbook").begin_object().field("M_a_bytes", r.analytic.M_a);
    j.field("M_c_bytes", r.analytic.M_c).field("T_c_ratio", r.analytic.T_c_ratio);
    j.field("interval", r.analytic.interval).field("ms", if_finite(d.textbook_ms)).end_object();
    j.end_object();
  }
  j.end_array().end_object();
  return j.str() + "\n";
}

void print_table(const Options& o, const std::vector<Point>& pts, const Baseline& none) {
  std::printf("\n%-18s %-9s %11s %11s %11s %9s %9s %6s %6s %7s %6s\n", "point", "policy", "arena",
              "lower bnd", "device", "ms/step", "tok/s", "meas", "pred", "textbk", "host");
  for (const Point& p : pts) {
    if (!p.plan) {
      std::printf("%-18s %s\n", p.label.c_str(), p.error.c_str());
      continue;
    }
    const Derived d = derive(p, none);
    const auto& a = p.plan->report.analytic;
    std::printf("%-18s %-9s %11s %11s %11s %9.2f %9.0f %5.3fx %5.3fx %7s %5.1f%%\n",
                p.label.c_str(), p.plan->policy.to_string().c_str(),
                format_bytes(p.plan->arena_bytes).c_str(),
                format_bytes(p.plan->arena_lower_bound).c_str(),
                format_bytes(p.memory.device_bytes_allocated).c_str(), p.m.median_wall_ms,
                tokens_per_step(o) / (p.m.median_wall_ms / 1000), d.measured_ratio,
                p.plan->report.predicted_step_ratio,
                a.T_c_ratio ? fmt("%.3fx", *a.T_c_ratio).c_str() : "-", 100 * d.host_fraction);
  }
  std::printf(
      "meas/pred: step time relative to policy none, measured and predicted by the planner;\n"
      "textbk: T_c/T_b = 1 + L/(2I); host: share of the step outside timed GPU dispatches\n");
  if (!none.estimated_from.empty())
    std::printf(
        "none did not run here: its %.2f ms/step is estimated from %s (measured / predicted "
        "ratio)\n",
        none.none_ms, none.estimated_from.c_str());
}

// The largest budget of the sweep: none's arena, or what the device has left after the model
// when that is less (a budget the device cannot hold only repeats none's error).
uint64_t sweep_top(const Device& device, const Plan& none) {
  const uint64_t device_bytes = device.info().device_local_bytes();
  if (device_bytes > none.persistent_bytes)
    return std::min(none.arena_bytes, device_bytes - none.persistent_bytes);
  return none.arena_bytes;
}

int run_frontier(const Options& o) {
  auto device = Device::open();
  std::printf("device   %s\n", device->summary().c_str());
  const ModelConfig& m = o.sel.model;
  std::string extras;
  if (o.sel.shape.loss_chunk > 0)
    extras += "; loss in chunks of " + std::to_string(o.sel.shape.loss_chunk) + " rows";
  if (o.lora.enabled()) extras += "; LoRA r " + std::to_string(o.lora.rank);
  std::printf("model    %s: %s; batch %d x seq %d%s; %d warm-up + %d measured steps per point\n",
              o.sel.model_name.c_str(), model_shape_text(m).c_str(), o.sel.shape.batch,
              o.sel.shape.seq, extras.c_str(), o.warmup, o.steps);
  std::fflush(stdout);

  std::vector<Point> pts;
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

struct Peak {
  double gflops = 0;  // peak_fma
  double gbps = 0;    // peak_copy
  double fma_ms = 0, copy_ms = 0;
};

double median_dispatch_ms(KernelCache& kc, Dispatch d, int repeats) {
  ExecutorOptions opt;
  opt.timestamps = true;
  Executor ex(kc, {std::move(d)}, opt);
  ex.run();  // warm-up: pipeline creation, first touch of the memory
  std::vector<double> v;
  for (int i = 0; i < repeats; ++i) {
    ex.run();
    v.push_back(ex.dispatch_ms().at(0));
  }
  return median(v);
}

Peak measure_peak(Device& device, int repeats) {
  KernelCache kc(device);
  Peak p;
  // FMA: enough invocations to fill a large GPU; lengthen the chains until a run takes >= 30 ms.
  const uint32_t count = 1u << 20;
  Buffer out(device, uint64_t(count) * 4, MemoryCategory::scratch, "peak_fma out");
  uint32_t iterations = 8;
  for (;;) {
    const double ms =
        median_dispatch_ms(kc, kernels::peak_fma(count, iterations, 1.0f, 1.0f, out.whole()), 1);
    if (ms >= 30 || iterations >= 4096) break;
    const double grow = ms > 0 ? std::ceil(40 / ms) : 64;
    iterations =
        std::min<uint32_t>(4096, iterations * static_cast<uint32_t>(std::clamp(grow, 2.0, 64.0)));
  }
  p.fma_ms = median_dispatch_ms(kc, kernels::peak_fma(count, iterations, 1.0f, 1.0f, out.whole()),
                                repeats);
  p.gflops = kernels::peak_fma_flops(count, iterations) / (p.fma_ms * 1e6);
  // Copy: 64 MiB each way (within a 128 MiB storage-buffer binding), well past any cache.
  const uint32_t vec4s =
      std::min<uint64_t>(64ull << 20, device.info().max_storage_buffer_range) / 16;
  Buffer src(device, uint64_t(vec4s) * 16, MemoryCategory::scratch, "peak_copy src");
  Buffer dst(device, uint64_t(vec4s) * 16, MemoryCategory::scratch, "peak_copy dst");
  p.copy_ms = median_dispatch_ms(kc, kernels::peak_copy(vec4s, src.whole(), dst.whole()), repeats);
  p.gbps = kernels::peak_copy_bytes(vec4s) / (p.copy_ms * 1e6);
  return p;
}

struct KernelRow {
  std::string name;  // the step's label, or its kind for a family
  OpKind kind{};
  std::string phase;
  double ms = 0, flops = 0, bytes = 0;
  int count = 0;
};

// Where the texel matmuls' tiles came from, and each shape class's tile.
void print_matmul_tiles(const Session& s) {
  const MatmulTuningReport& r = s.matmul_tuning();
  const MatmulTiling& t = s.matmul_tiling();
  if (r.classes == 0) {
    std::printf("tiles    matmul: device defaults, outer %ux%u/%u, dot %ux%u/%u (%s)\n",
                t.outer.rows, t.outer.cols, t.outer.wx, t.dot.rows, t.dot.cols, t.dot.wx,
                s.config().measure_matmul_tiles && matmul_tuning_enabled_by_env()
                    ? "nothing to measure"
                    : "REMAT_MATMUL_TUNING=off");
    return;
  }
  std::printf(
      "tiles    matmul: %zu shape classes, %zu from the tile file, %zu measured in %.0f ms\n",
      r.classes, r.from_file, r.measured, r.measure_ms);
  for (const auto& [c, tile] : t.chosen)
    std::printf("         %-20s rows %2u, cols %2u%s, workgroup %u\n", matmul_class_key(c).c_str(),
                tile.rows, tile.cols, c.kernel == TexelMatmul::outer ? " vec4" : "     ", tile.wx);
}

int run_kernels(const Options& o) {
  auto device = Device::open();
  std::printf("device   %s\n", device->summary().c_str());
  std::fflush(stdout);
  const Peak peak = measure_peak(*device, o.repeats);
  std::printf(
      "peak     FMA %.1f GFLOP/s (peak_fma, %.2f ms), copy %.1f GB/s (peak_copy, %.2f ms); "
      "ridge %.1f FLOP/byte\n",
      peak.gflops, peak.fma_ms, peak.gbps, peak.copy_ms, peak.gflops / peak.gbps);
  const ModelConfig& m = o.sel.model;
  std::printf(
      "model    %s: L%d C%d H%d V%d; batch %d x seq %d; policy none; %d warm-up + %d "
      "measured steps, median per kernel\n",
      o.sel.model_name.c_str(), m.layers, m.dim, m.heads, m.vocab, o.sel.shape.batch,
      o.sel.shape.seq, o.warmup, o.steps);
  std::fflush(stdout);
  SessionConfig cfg;
  cfg.model = m;
  cfg.shape = o.sel.shape;
  cfg.lora = o.lora;
  cfg.timestamps = true;
  Session session(*device, cfg);
  print_matmul_tiles(session);
  const Measurement meas = measure_session(session, o.warmup, o.steps);

  std::vector<KernelRow> rows;
  std::map<OpKind, KernelRow> families;
  for (const StepTime& s : meas.steps) {
    const KernelRow r{s.label,       s.kind,      phase_name(s.step->phase), s.ms, s.step->flops,
                      s.step->bytes, s.dispatches};
    rows.push_back(r);
    KernelRow& f = families[s.kind];
    f.name = std::string(op_kind_name(s.kind));
    f.kind = s.kind;
    f.ms += r.ms, f.flops += r.flops, f.bytes += r.bytes, ++f.count;
  }
  auto line = [&](const KernelRow& r) {
    const double gfs = r.flops / (r.ms * 1e6), gbs = r.bytes / (r.ms * 1e6);
    const double ai = r.bytes > 0 ? r.flops / r.bytes : INFINITY;
    // A kernel with no FLOPs (pure data movement) is bound by bandwidth alone.
    const double roof = r.flops > 0 ? std::min(peak.gflops, ai * peak.gbps) : 0;
    std::printf("%-34.34s %4d %9.3f %9.3f %8.2f %8.2f %6.1f%% %6.1f%% %6.1f%%\n", r.name.c_str(),
                r.count, r.ms, r.flops / 1e9, gfs, gbs, 100 * gfs / peak.gflops,
                100 * gbs / peak.gbps, roof > 0 ? 100 * gfs / roof : 100 * gbs / peak.gbps);
  };
  std::printf("\n%-34s %4s %9s %9s %8s %8s %7s %7s %7s\n", "kernel (step)", "n", "ms", "GFLOP",
              "GFLOP/s", "GB/s", "%FMA", "%copy", "%roof");
  for (const KernelRow& r : rows) line(r);
  std::printf("\nper family (sum over the step)\n");
  std::vector<KernelRow> fam;
  for (const auto& [k, f] : families) fam.push_back(f);
  std::sort(fam.begin(), fam.end(),
            [](const KernelRow& a, const KernelRow& b) { return a.ms > b.ms; });
  for (const KernelRow& r : fam) line(r);
  std::printf("\nstep     %.1f ms wall, %.1f ms in timed dispatches, host %.1f ms (%.1f%%)\n",
              meas.median_wall_ms, meas.median_gpu_ms, meas.median_host_ms,
              100 * meas.median_host_ms / meas.median_wall_ms);
  std::printf("recorded %zu dispatches, %zu barriers between them\n", session.dispatch_count(),
              session.barrier_count());
  std::printf(
      "%%FMA, %%copy: rate / measured peak; %%roof: GFLOP/s / min(peak FMA, FLOP/byte x peak "
      "copy)\n");

  std::string s =
      "kind,step,phase,dispatches,ms,flops,bytes,gflop_per_s,gb_per_s,peak_gflop_per_s,peak_gb_per_"
      "s\n";
  for (const KernelRow& r : rows)
    s += std::string(op_kind_name(r.kind)) + "," + csv_cell(r.name) + "," + csv_cell(r.phase) +
         "," + std::to_string(r.count) + "," + fmt("%.6f", r.ms) + "," + json_number(r.flops) +
         "," + json_number(r.bytes) + "," + fmt("%.4f", r.flops / (r.ms * 1e6)) + "," +
         fmt("%.4f", r.bytes / (r.ms * 1e6)) + "," + fmt("%.4f", peak.gflops) + "," +
         fmt("%.4f", peak.gbps) + "\n";
  std::filesystem::create_directories(o.out);
  write_file_atomically(o.out / "kernels.csv", s);
  std::printf("wrote    %s\n", (o.out / "kernels.csv").string().c_str());
  return 0;
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  if (print_help_if_requested(args, spec())) return 0;
  const Options o = parse(args);
  if (o.configs) {
    std::vector<std::string> rest;
    for (const std::string& arg : args)
      if (arg != "--sweep-configs") rest.push_back(arg);
    return run_config_sweep(rest, spec(), {o.steps, o.warmup, o.points, o.plot, o.out});
  }
  return o.kernels ? run_kernels(o) : run_frontier(o);
}

}  // namespace remat::cli
