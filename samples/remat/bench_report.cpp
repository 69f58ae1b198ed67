// `remat bench`'s frontier report: the table it prints, its CSV and its JSON.
#include "bench_report.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "graph/weight_dtype.h"

namespace remat::cli {
namespace {

constexpr const char* kCsvHeader =
    "label,policy,budget_bytes,arena_bytes,arena_lower_bound_bytes,persistent_bytes,"
    "planned_total_bytes,device_bytes_allocated,median_step_ms,tokens_per_s,gpu_ms,host_ms,"
    "host_fraction,measured_ratio,predicted_ratio,predicted_ms,recompute_flops,textbook_M_a_bytes,"
    "textbook_M_c_bytes,textbook_T_c_ratio,textbook_interval,textbook_ms,checkpoints,error";

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

struct Derived {
  double measured_ratio = NAN;  // median ms / none's ms
  double predicted_ms = NAN;    // none's ms x predicted ratio
  double textbook_ms = NAN;     // none's ms x T_c/T_b
  double host_fraction = NAN;   // host ms / wall ms
};

Derived derive(const BenchPoint& p, const Baseline& none) {
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

}  // namespace

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (char c : text) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

Baseline baseline(const std::vector<BenchPoint>& pts) {
  const BenchPoint* best = nullptr;
  for (const BenchPoint& p : pts) {
    if (!p.plan || !(p.m.median_wall_ms > 0)) continue;
    if (p.label == "none") return {p.m.median_wall_ms, ""};
    if (!best || p.plan->report.predicted_step_ratio < best->plan->report.predicted_step_ratio)
      best = &p;
  }
  if (!best) return {};
  return {best->m.median_wall_ms / best->plan->report.predicted_step_ratio, best->label};
}

std::string csv(const BenchOptions& o, const std::vector<BenchPoint>& pts, const Baseline& none) {
  std::string s = std::string(kCsvHeader) + "\n";
  for (const BenchPoint& p : pts) {
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

std::string json(const BenchOptions& o, const Device& device, const std::vector<BenchPoint>& pts,
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
  for (const BenchPoint& p : pts) {
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
        .field("forward_gpu_ms", p.m.forward_gpu_ms)
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

void print_table(const BenchOptions& o, const std::vector<BenchPoint>& pts, const Baseline& none) {
  std::printf("\n%-18s %-9s %11s %11s %11s %9s %9s %6s %6s %7s %6s\n", "point", "policy", "arena",
              "lower bnd", "device", "ms/step", "tok/s", "meas", "pred", "textbk", "host");
  for (const BenchPoint& p : pts) {
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

}  // namespace remat::cli
