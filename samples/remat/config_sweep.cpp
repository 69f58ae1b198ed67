#include "config_sweep.h"
#include "device_args.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "memory_text.h"
#include "model_args.h"
#include "plot_script.h"
#include "runtime/session.h"
#include "runtime/session_budget.h"
#include "runtime/vulkan/device.h"
#include "step_timing.h"

namespace remat::cli {

const std::vector<SweepConfig>& sweep_configs() {
  static const std::vector<SweepConfig> configs = {
      {"full fine-tune, f32", {}},
      {"LoRA r8, f32 base", {"--lora", "8"}},
      {"LoRA r8, bf16 base", {"--lora", "8", "--weights-dtype", "bf16"}},
      {"LoRA r8, bf16 base + bf16 activations",
       {"--lora", "8", "--weights-dtype", "bf16", "--act-dtype", "bf16"}},
  };
  return configs;
}

namespace {

struct ConfigPoint {
  std::string config;             // SweepConfig::name
  uint64_t budget = 0;            // --memory
  uint64_t planned_total = 0;     // the session's planned whole-session bytes
  uint64_t device_allocated = 0;  // the device ledger's live bytes
  uint64_t arena = 0;             // the plan's arena
  int loss_chunk = 0;             // the chunk the planner chose (0: whole logits)
  double predicted_ratio = 0;     // the plan's predicted time / no recompute
  double median_ms = NAN;         // measured step time
  std::string error;              // why it did not run (a skipped configuration, a refusal)
};

struct Parsed {
  ModelSelection sel;
  LoraSpec lora;
};

Parsed parse_config(std::vector<std::string> argv, const CommandSpec& spec, const SweepConfig& c) {
  argv.insert(argv.end(), c.flags.begin(), c.flags.end());
  const Args a(argv, spec);
  Parsed p{parse_model_selection(a), parse_lora_flags(a)};
  // Every point is auto under a --memory budget, which picks the loss chunk unless one is given.
  p.sel.policy = Policy{Policy::Kind::automatic, 0};
  return p;
}

// Whole-session budgets from storing everything (the largest useful one), or the device's memory
// when that is less, down to the smallest total that plans, geometric.
std::vector<uint64_t> config_budgets(const Parsed& p, const MemoryRequest& r, int n,
                                     uint64_t device_bytes) {
  const uint64_t lo = minimum_memory(p.sel.model, p.sel.shape, p.lora, r).total();
  const Plan none =
      plan(p.sel.model, p.sel.shape, Policy{}, std::nullopt, r.alignment, r.costs, p.lora);
  uint64_t hi = session_memory(none, p.sel.shape.loss_chunk, r.max_binding_bytes).total();
  if (device_bytes) hi = std::min(hi, device_bytes);
  hi = std::max(hi, lo);
  std::vector<uint64_t> out;
  for (int k = 0; k < n; ++k) {
    const double f = n > 1 ? double(k) / double(n - 1) : 1.0;
    const auto b = static_cast<uint64_t>(std::llround(double(hi) * std::pow(double(lo) / hi, f)));
    const uint64_t clamped = k == n - 1 ? lo : std::clamp(b, lo, hi);
    if (out.empty() || out.back() != clamped) out.push_back(clamped);
  }
  return out;
}

ConfigPoint run_config_point(Device& device, const Parsed& p, const SweepConfig& c, uint64_t budget,
                             const ConfigSweepOptions& o) {
  ConfigPoint pt{c.name, budget};
  SessionConfig cfg;
  cfg.model = p.sel.model;
  cfg.lora = p.lora;
  cfg.shape = p.sel.shape;
  cfg.policy = p.sel.policy;
  cfg.memory_budget = budget;
  cfg.choose_loss_chunk = p.sel.choose_loss_chunk;
  cfg.costs = p.sel.costs ? &*p.sel.costs : nullptr;
  cfg.timestamps = true;
  try {
    Session session(device, cfg);
    const MemoryReport mem = session.memory();
    pt.planned_total = mem.planned_total_bytes;
    pt.device_allocated = mem.device_bytes_allocated;
    pt.arena = session.plan().arena_bytes;
    pt.loss_chunk = session.config().shape.loss_chunk;
    pt.predicted_ratio = session.plan().report.predicted_step_ratio;
    pt.median_ms = measure_session(session, o.warmup, o.steps).median_wall_ms;
  } catch (const std::invalid_argument& e) {
    pt.error = e.what();
  }
  return pt;
}

std::string csv(const std::vector<ConfigPoint>& pts) {
  std::string s =
      "config,budget_bytes,planned_total_bytes,device_bytes_allocated,arena_bytes,loss_chunk,"
      "predicted_ratio,median_step_ms,error\n";
  auto cell = [](const std::string& t) {
    std::string q = "\"";
    for (char ch : t) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const ConfigPoint& p : pts) {
    const bool ran = p.error.empty();
    s += cell(p.config) + "," + (p.budget ? std::to_string(p.budget) : "") + "," +
         (ran ? std::to_string(p.planned_total) + "," + std::to_string(p.device_allocated) + "," +
                    std::to_string(p.arena) + "," + std::to_string(p.loss_chunk) + "," +
                    json_number(p.predicted_ratio) + "," + json_number(p.median_ms)
              : std::string(",,,,,")) +
         "," + cell(p.error) + "\n";
  }
  return s;
}

std::string json(const Device& device, const Parsed& base, const std::vector<ConfigPoint>& pts) {
  JsonWriter j;
  const ModelConfig& m = base.sel.model;
  j.begin_object().field("device", device.summary());
  j.key("model").begin_object().field("name", base.sel.model_name).field("layers", m.layers);
  j.field("dim", m.dim).field("vocab", m.vocab).end_object();
  j.field("batch", base.sel.shape.batch).field("seq", base.sel.shape.seq).key("points");
  j.begin_array();
  for (const ConfigPoint& p : pts) {
    j.begin_object().field("config", p.config).field("budget_bytes", p.budget);
    if (!p.error.empty()) {
      j.field("error", p.error).end_object();
      continue;
    }
    j.field("planned_total_bytes", p.planned_total)
        .field("device_bytes_allocated", p.device_allocated);
    j.field("arena_bytes", p.arena).field("loss_chunk", p.loss_chunk);
    j.field("predicted_ratio", p.predicted_ratio).field("median_step_ms", p.median_ms);
    j.end_object();
  }
  j.end_array().end_object();
  return j.str() + "\n";
}

void print_point(const ConfigPoint& p) {
  if (!p.error.empty()) {
    std::printf("  %-12s %s\n", p.budget ? format_bytes(p.budget).c_str() : "-", p.error.c_str());
  } else {
    std::printf("  %-12s total %s (device %s), arena %s, loss chunk %d: %.1f ms/step\n",
                format_bytes(p.budget).c_str(), format_bytes(p.planned_total).c_str(),
                format_bytes(p.device_allocated).c_str(), format_bytes(p.arena).c_str(),
                p.loss_chunk, p.median_ms);
  }
  std::fflush(stdout);
}

}  // namespace

int run_config_sweep(const std::vector<std::string>& args, const CommandSpec& spec,
                     const ConfigSweepOptions& o) {
  const Parsed base = parse_config(args, spec, {"", {}});
  auto device = open_device(base.sel.device_profile);
  std::printf("device   %s\n", device->summary().c_str());
  std::printf("model    %s: %s; batch %d x seq %d; %d warm-up + %d measured steps per point\n",
              base.sel.model_name.c_str(), model_shape_text(base.sel.model).c_str(),
              base.sel.shape.batch, base.sel.shape.seq, o.warmup, o.steps);
  std::vector<ConfigPoint> pts;
  for (const SweepConfig& c : sweep_configs()) {
    std::printf("config   %s\n", c.name.c_str());
    std::optional<Parsed> p;
    try {
      p = parse_config(args, spec, c);
    } catch (const std::exception& e) {
      pts.push_back({c.name, 0, 0, 0, 0, 0, 0, NAN, std::string("skipped: ") + e.what()});
      print_point(pts.back());
      continue;
    }
    MemoryRequest r =
        memory_request(p->sel, session_alignment(*device), device->plan().quirks.max_binding_bytes,
                       session_allocation_limits(*device, SessionConfig{}));
    for (uint64_t b : config_budgets(*p, r, o.points, device->info().device_local_bytes())) {
      pts.push_back(run_config_point(*device, *p, c, b, o));
      print_point(pts.back());
    }
  }
  std::filesystem::create_directories(o.out);
  const auto csv_path = o.out / "configs.csv", json_path = o.out / "configs.json";
  write_file_atomically(csv_path, csv(pts));
  write_file_atomically(json_path, json(*device, base, pts));
  std::printf("wrote    %s, %s\n", csv_path.string().c_str(), json_path.string().c_str());
  if (o.plot) make_plot("plot_frontier.py", json_path, o.out / "configs.png");
  return 0;
}

}  // namespace remat::cli
