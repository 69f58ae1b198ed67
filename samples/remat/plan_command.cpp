// `remat plan`: what fits, and at what cost? Plans one training step for a model, batch and
// sequence length without a GPU, prints the chosen plan and a comparison over policies, with the
// textbook estimate beside the exact numbers.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "cli_args.h"
#include "commands.h"
#include "data_args.h"
#include "formats/hf_folder.h"
#include "graph/cost_model.h"
#include "graph/delta_rule_workspace.h"
#include "graph/model_builder.h"
#include "memory_text.h"
#include "model_args.h"
#include "planner/delta_chunk.h"
#include "planner/layer_memory.h"
#include "planner/memory_budget.h"
#include "planner/plan.h"
#include "planner/session_plan.h"
#include "runtime/session_budget.h"
#include "runtime/vulkan/device_profiles.h"

namespace remat::cli {
namespace {

CommandSpec spec() {
  CommandSpec c{"plan", "[MODEL]", 1,
                "Plans one training step for a model, batch and sequence length without a GPU:\n"
                "memory by category, what is recomputed, the predicted step time, and a table\n"
                "over the policies, with the textbook estimate beside the exact numbers.\n",
                model_flags()};
  for (FlagSpec& f : lora_flags()) c.flags.push_back(std::move(f));
  c.flags.push_back({"--init", "PATH",
                     "the model of a checkpoint: a Hugging Face model folder's config.json, or "
                     "the GPT-2 a .safetensors file implies (only headers are read)",
                     ""});
  for (FlagSpec& f : data_flags("data a step would read (as remat train reads it): with JSONL "
                                "examples, the rows, padding and trained targets a step, one "
                                "example a row and packed (--pack)"))
    c.flags.push_back(std::move(f));
  c.flags.push_back(
      {"--delta-chunk", "TOKENS",
       "Qwen3.5: tokens per chunk of the Gated DeltaNet recurrence (0: one chunk, else a "
       "multiple of 64); auto plans each length that fits a binding and keeps the best",
       "auto"});
  c.flags.push_back({"--objective", "O",
                     "sft, or dpo or kto: a preference step, --batch counting pairs (or examples) "
                     "of two rows each, one loss scale per row, reference log-probs on the host",
                     "sft"});
  c.flags.push_back({"--alignment", "BYTES", "alignment of every tensor's offset", "256"});
  c.flags.push_back({"--json", "", "print the plan as JSON", ""});
  return c;
}

struct Options {
  ModelSelection sel;              // model, shape, policy, arena, costs
  LoraSpec lora;                   // --lora (rank 0: full fine-tuning)
  uint64_t alignment = 0;          // --alignment
  bool json = false;               // --json
  bool choose_delta_chunk = true;  // --delta-chunk auto
  DataOptions data;                // --data and how it is read; --pack plans packed rows
  std::string objective = "sft";   // --objective: dpo and kto plan 2·B rows with row scales
};

Options parse_options(const std::vector<std::string>& argv) {
  Args a(argv, spec());
  Options o;
  std::optional<ModelConfig> base;
  if (auto w = a.get("--init")) {
    std::optional<int> heads;
    if (auto h = a.get_int("--heads", 1, 1 << 20)) heads = static_cast<int>(*h);
    base = checkpoint_model(*w, heads);
  }
  o.sel = parse_model_selection(a, base);
  if (a.has("--delta-chunk") && !o.sel.model.qwen35)
    throw UsageError("--delta-chunk is for Qwen3.5 models (Gated DeltaNet layers)");
  if (a.get_or_default("--delta-chunk") != "auto") {
    o.choose_delta_chunk = false;
    o.sel.shape.delta_chunk = static_cast<int>(a.get_int("--delta-chunk", 0, 1 << 30).value_or(0));
    if (const char* why = delta_chunk_refusal(o.sel.shape.delta_chunk); *why != '\0')
      throw UsageError("--delta-chunk " + std::string(why) + ", got " +
                       std::to_string(o.sel.shape.delta_chunk));
  }
  o.lora = parse_lora_flags(a);
  std::optional<std::filesystem::path> init;
  if (auto w = a.get("--init")) init = *w;
  keep_base_blocks(o.sel, a, init, o.lora);
  o.data = parse_data_flags(a, init);
  o.sel.shape.packed = o.data.jsonl.pack;
  o.objective = a.get_or_default("--objective");
  if (o.objective != "sft" && o.objective != "dpo" && o.objective != "kto")
    throw UsageError("--objective must be sft, dpo or kto, not '" + o.objective + "'");
  if (o.objective != "sft") {
    if (o.data.data || o.sel.shape.packed)
      throw UsageError("--objective " + o.objective +
                       " plans a step's shape; --data and --pack are for SFT rows");
    // B examples run 2B rows (runtime/preference_session.h preference_session_config).
    o.sel.shape.batch *= 2;
    o.sel.shape.row_loss_scales = true;
  }
  o.alignment = static_cast<uint64_t>(a.get_int_or_default("--alignment", 1, 1 << 20));
  o.json = a.has("--json");
  return o;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string flops(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g TFLOP", v / 1e12);
  return buf;
}
// One row of the comparison table.
struct Row {
  std::string policy;        // policy text
  std::optional<Plan> plan;  // absent when the policy could not be planned
  std::string error;         // why not
};

std::vector<Row> policy_table(const Graph& g, const Options& o) {
  std::vector<std::string> names = {"none",    "every:1", "every:2",  "every:4",
                                    "every:8", "sqrt",    "selective"};
  if (o.sel.arena) names.push_back("auto");
  std::vector<Row> rows;
  for (const std::string& n : names) {
    Row r{n, std::nullopt, ""};
    const Policy p = Policy::parse(n);
    try {
      r.plan = plan_graph(
          g, {p, p.kind == Policy::Kind::automatic ? o.sel.arena : std::nullopt, o.alignment,
              o.sel.costs ? &*o.sel.costs : nullptr, deviceless_allocation_limits()});
    } catch (const std::invalid_argument& e) {
      r.error = e.what();
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// What LoRA changes, next to full fine-tuning of the same model and shape.
struct LoraSummary {
  uint64_t trained_elements = 0;       // adapters' parameters
  uint64_t model_elements = 0;         // the frozen model's
  uint64_t model_bytes = 0;            // ... as stored (--weights-dtype)
  uint64_t full_persistent_bytes = 0;  // full fine-tuning's persistent buffer
  LayerActivationBytes layer;          // a middle transformer block under LoRA
  LayerActivationBytes full_layer;     // the same block under full fine-tuning
};

std::optional<LoraSummary> lora_summary(const Graph& g, const Options& o) {
  if (!o.lora.enabled()) return std::nullopt;
  LoraSummary s;
  for (TensorId t : g.parameters) s.trained_elements += uint64_t(g.tensor(t).elements());
  for (TensorId t : g.frozen) {
    s.model_elements += uint64_t(g.tensor(t).elements());
    s.model_bytes += g.tensor(t).bytes();
  }
  TrainShape full_shape = o.sel.shape;
  full_shape.weight_dtype = DType::f32;  // full fine-tuning trains (so stores) every weight in f32
  full_shape.block_weights.clear();
  const Graph full = build_training_model(o.sel.model, full_shape);
  const int mid = static_cast<int>(g.blocks.size()) / 2;
  s.layer = layer_activation_bytes(g, mid, o.alignment);
  s.full_layer = layer_activation_bytes(full, mid, o.alignment);
  s.full_persistent_bytes = plan_graph(full, {Policy{}, std::nullopt, o.alignment, nullptr,
                                              deviceless_allocation_limits()})
                                .persistent_bytes;
  return s;
}

void print_lora(const Options& o, const LoraSummary& s) {
  std::string targets;
  for (const auto& t : lora_targets(o.lora, o.sel.model))
    targets += (targets.empty() ? "" : ",") + t;
  std::printf(
      "lora r %d, alpha %g (scale %g), targets %s: %.3fM trained of %.2fM frozen (%s, 2-D "
      "weights %s)\n",
      o.lora.rank, o.lora.effective_alpha(), double(o.lora.scale()), targets.c_str(),
      double(s.trained_elements) / 1e6, double(s.model_elements) / 1e6,
      format_bytes(s.model_bytes).c_str(),
      (o.sel.shape.block_weights.empty()
           ? std::string(dtype_name(o.sel.shape.weight_dtype))
           : "in the file's blocks where read by matmuls, the embedding or the head, else " +
                 std::string(dtype_name(o.sel.shape.weight_dtype)))
          .c_str());
  std::printf("  persistent %s with full fine-tuning\n",
              format_bytes(s.full_persistent_bytes).c_str());
  std::printf(
      "  activations one layer keeps for its backward (nothing recomputed): full fine-tuning %s, "
      "LoRA %s; %s more if frozen weights' gradients were computed\n",
      format_bytes(s.full_layer.saved).c_str(), format_bytes(s.layer.saved).c_str(),
      format_bytes(s.layer.frozen_weight_inputs).c_str());
}

void analytic_json(JsonWriter& j, const AnalyticEstimate& a) {
  j.begin_object().field("M_a", a.M_a).field("M_c", a.M_c).field("T_c_ratio", a.T_c_ratio);
  j.field("interval", a.interval).end_object();
}

void row_json(JsonWriter& j, const Row& r) {
  j.begin_object().field("policy", r.policy);
  if (!r.plan) {
    j.field("error", r.error).end_object();
    return;
  }
  const Plan& p = *r.plan;
  j.field("arena_bytes", p.arena_bytes).field("arena_lower_bound_bytes", p.arena_lower_bound);
  j.field("recompute_flops", p.report.recompute_flops);
  j.field("predicted_step_ratio", p.report.predicted_step_ratio).key("analytic");
  analytic_json(j, p.report.analytic);
  j.end_object();
}

void string_list(JsonWriter& j, const std::vector<std::string>& v) {
  j.begin_array();
  for (const auto& s : v) j.value(s);
  j.end_array();
}

// The training objective; a preference one adds its step's shape (B examples of 2 rows, one
// loss scale each) and where the reference log-probs come from (the text output's line).
void objective_json(JsonWriter& j, const Options& o) {
  j.key("objective").begin_object().field("name", o.objective);
  if (o.objective != "sft") {
    const int rows = o.sel.shape.batch;
    j.field("examples", rows / 2).field("rows_per_example", 2);
    j.field("row_loss_scale_bytes", uint64_t(rows) * uint64_t(o.sel.shape.seq) * 4);
    j.field("reference", "precomputed").field("reference_place", "host");
    j.field("reference_bytes_per_answer", 8);
  }
  j.end_object();
}

void print_json(const Options& o, const Plan& p, const std::vector<Row>& rows, double ms,
                const std::optional<LoraSummary>& lora, const SessionMemory& memory,
                const std::optional<TrainingData>& data) {
  const Report& r = p.report;
  const ModelConfig& m = o.sel.model;
  JsonWriter j(2);
  j.begin_object().key("model").begin_object().field("name", o.sel.model_name);
  j.field("layers", m.layers).field("dim", m.dim).field("heads", m.heads).field("vocab", m.vocab);
  j.field("ctx", m.ctx).field("arch", architecture_name(m.arch));
  j.field("kv_heads", m.kv_head_count()).field("ffn", m.mlp_width()).end_object();
  j.field("batch", o.sel.shape.batch).field("seq", o.sel.shape.seq);
  j.field("dtype", dtype_name(o.sel.shape.activation_dtype));
  j.field("loss_chunk", o.sel.shape.loss_chunk).field("packed", o.sel.shape.packed);
  objective_json(j, o);
  if (r.delta_chunk > 0)
    j.key("delta_rule")
        .begin_object()
        .field("chunk", r.delta_chunk)
        .field("state_bytes", r.delta_state_bytes)
        .field("state_layers", r.delta_state_layers)
        .field("recomputed_layers", r.delta_states_recomputed)
        .end_object();
  if (data) {
    j.key("data").begin_object().field("file", o.data.data->string()).field("kind", data->kind);
    j.key("rows");
    packing_json(j, data->data, o.sel.shape.batch);
    j.end_object();
  }
  j.field("policy", p.policy.to_string()).field("budget_bytes", o.sel.arena);
  j.field("arena_bytes", p.arena_bytes).field("arena_lower_bound_bytes", p.arena_lower_bound);
  j.field("persistent_bytes", p.persistent_bytes).field("alignment", p.alignment);
  j.key("session");
  session_memory_json(j, memory, o.sel.memory);
  j.key("allocations");
  allocations_json(j, p, memory);
  j.key("persistent").begin_object().field("parameters", r.parameter_bytes);
  j.field("grads", r.grad_bytes).field("adam", r.adam_bytes).field("io", r.io_bytes).end_object();
  j.key("arena_at_peak").begin_object().field("saved_activations", r.saved_activation_bytes);
  j.field("recompute", r.recompute_bytes).field("gradients", r.grads_in_flight_bytes);
  j.field("workspace", r.workspace_bytes).end_object();
  j.key("checkpoints");
  string_list(j, r.checkpoints);
  j.key("stored_blocks");
  string_list(j, r.stored_blocks);
  j.field("nesting_depth", r.nesting_depth).field("forward_flops", r.forward_flops);
  j.field("backward_flops", r.backward_flops).field("recompute_flops", r.recompute_flops);
  j.field("predicted_step_ratio", r.predicted_step_ratio).field("steps", p.steps.size());
  j.field("planning_ms", ms).key("analytic");
  analytic_json(j, r.analytic);
  if (lora) {
    j.key("lora").begin_object().field("r", o.lora.rank).field("alpha", o.lora.effective_alpha());
    j.key("targets");
    string_list(j, lora_targets(o.lora, o.sel.model));
    j.field("trained_parameters", lora->trained_elements);
    j.field("frozen_parameters", lora->model_elements);
    j.field("frozen_bytes", lora->model_bytes);
    j.field("weights_dtype", dtype_name(o.sel.shape.weight_dtype));
    j.field("full_finetune_persistent_bytes", lora->full_persistent_bytes);
    j.field("layer_saved_bytes", lora->layer.saved);
    j.field("layer_frozen_weight_input_bytes", lora->layer.frozen_weight_inputs);
    j.field("full_finetune_layer_saved_bytes", lora->full_layer.saved).end_object();
  }
  j.key("policies").begin_array();
  for (const Row& row : rows) row_json(j, row);
  j.end_array().end_object();
  std::printf("%s\n", j.str().c_str());
}

std::string join(const std::vector<std::string>& v) {
  if (v.empty()) return "none";
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// Without a device the binding limit is the smallest Vulkan allows (the most gradient-norm
// pieces), so the total is what the most limited device needs; a device profile gives its own.
uint64_t profile_binding_limit(const std::string& profile) {
  if (profile.empty()) return kSmallestBindingLimit;
  return device_profile(profile).max_storage_buffer_range.value_or(kSmallestBindingLimit);
}

void print_human(const Options& o, const Plan& p, const std::vector<Row>& rows, double ms,
                 const std::optional<LoraSummary>& lora, const SessionMemory& memory,
                 const std::optional<TrainingData>& data) {
  const Report& r = p.report;
  std::printf("model %s: %s, batch %d, seq %d, activations %s\n", o.sel.model_name.c_str(),
              model_shape_text(o.sel.model).c_str(), o.sel.shape.batch, o.sel.shape.seq,
              std::string(dtype_name(o.sel.shape.activation_dtype)).c_str());
  if (!o.sel.device_profile.empty())
    std::printf("device profile %s: bindings of at most %s\n", o.sel.device_profile.c_str(),
                format_bytes(profile_binding_limit(o.sel.device_profile)).c_str());
  if (o.sel.shape.packed)
    std::printf("packed rows: positions restart per example, attention within an example\n");
  if (data) std::printf("%s", data_report(*o.data.data, *data, o.sel.shape.batch).c_str());
  if (r.delta_chunk > 0)
    std::printf(
        "delta rule in chunks of %d tokens: chunk-start states %s over %d layers, %d "
        "recomputed\n",
        r.delta_chunk, format_bytes(r.delta_state_bytes).c_str(), r.delta_state_layers,
        r.delta_states_recomputed);
  if (o.sel.shape.loss_chunk > 0)
    std::printf("loss in chunks of %d rows: logits of one chunk at a time\n",
                std::min(o.sel.shape.loss_chunk, o.sel.shape.batch * o.sel.shape.seq));
  std::printf("policy %s%s: arena %s (lower bound %s, layout/bound %.4f), persistent %s\n",
              p.policy.to_string().c_str(), budget_text(o.sel, o.sel.shape.loss_chunk).c_str(),
              format_bytes(p.arena_bytes).c_str(), format_bytes(p.arena_lower_bound).c_str(),
              p.arena_lower_bound ? double(p.arena_bytes) / double(p.arena_lower_bound) : 1.0,
              format_bytes(p.persistent_bytes).c_str());
  std::printf("  persistent: parameters %s, grads %s, AdamW m+v %s, tokens/targets/losses %s\n",
              format_bytes(r.parameter_bytes).c_str(), format_bytes(r.grad_bytes).c_str(),
              format_bytes(r.adam_bytes).c_str(), format_bytes(r.io_bytes).c_str());
  std::printf("  %s\n", session_memory_line(memory, o.sel.memory).c_str());
  std::printf("  %s\n", allocations_line(p, memory).c_str());
  if (lora) print_lora(o, *lora);
  std::printf(
      "  arena at peak: saved activations %s, recomputed %s, gradients in flight %s, workspace "
      "%s\n",
      format_bytes(r.saved_activation_bytes).c_str(), format_bytes(r.recompute_bytes).c_str(),
      format_bytes(r.grads_in_flight_bytes).c_str(), format_bytes(r.workspace_bytes).c_str());
  std::printf("  checkpoints (block inputs): %s; nesting depth %d\n", join(r.checkpoints).c_str(),
              r.nesting_depth);
  std::printf("  stored in the first pass: %s\n", join(r.stored_blocks).c_str());
  std::printf("  FLOPs: forward %s, backward %s, recompute %s; predicted step time %.3fx of none\n",
              flops(r.forward_flops).c_str(), flops(r.backward_flops).c_str(),
              flops(r.recompute_flops).c_str(), r.predicted_step_ratio);
  std::printf("  textbook: M_a %s", format_bytes(static_cast<uint64_t>(r.analytic.M_a)).c_str());
  if (r.analytic.interval)
    std::printf(", I=%d: M_c %s, T_c/T_b %.3f", *r.analytic.interval,
                format_bytes(static_cast<uint64_t>(*r.analytic.M_c)).c_str(),
                *r.analytic.T_c_ratio);
  std::printf("\n  %zu steps, planned in %.1f ms\n\n", p.steps.size(), ms);
  std::printf("%-10s %12s %12s %8s %16s %10s %12s %8s\n", "policy", "arena", "lower bound", "ratio",
              "recompute", "time", "textbook M_c", "T_c/T_b");
  for (const Row& row : rows) {
    if (!row.plan) {
      std::printf("%-10s %s\n", row.policy.c_str(), row.error.c_str());
      continue;
    }
    const Plan& q = *row.plan;
    const AnalyticEstimate& a = q.report.analytic;
    std::printf("%-10s %12s %12s %8.4f %16s %9.3fx %12s %8s\n", row.policy.c_str(),
                format_bytes(q.arena_bytes).c_str(), format_bytes(q.arena_lower_bound).c_str(),
                q.arena_lower_bound ? double(q.arena_bytes) / double(q.arena_lower_bound) : 1.0,
                flops(q.report.recompute_flops).c_str(), q.report.predicted_step_ratio,
                a.M_c ? format_bytes(static_cast<uint64_t>(*a.M_c)).c_str() : "-",
                a.T_c_ratio ? num(*a.T_c_ratio).c_str() : "-");
  }
}

}  // namespace

int run_plan(const std::vector<std::string>& args) {
  if (print_help_if_requested(args, spec())) return 0;
  Options o = parse_options(args);
  // The data as remat train reads it (a step of B rows: plan has no --accum); --pack without
  // --data plans packed rows with nothing to count.
  std::optional<TrainingData> data;
  if (o.data.data)
    data = load_training_data(*o.data.data, o.data.format, o.data.tokenizer, o.sel.shape.seq,
                              o.sel.model.vocab, o.data.jsonl);
  const auto start = std::chrono::steady_clock::now();
  // Without a device the binding limit is the smallest Vulkan allows (the most gradient-norm
  // pieces), so the total is what the most limited device needs; a device profile gives its own.
  // Allocations are lavapipe's (planner/allocation_pages.h).
  const uint64_t binding_limit = profile_binding_limit(o.sel.device_profile);
  const SessionPlanRequest request{o.sel.policy,
                                   o.sel.arena,
                                   o.sel.memory,
                                   o.sel.choose_loss_chunk,
                                   o.alignment,
                                   binding_limit,
                                   o.sel.costs ? &*o.sel.costs : nullptr,
                                   deviceless_allocation_limits()};
  SessionPlan planned =
      o.choose_delta_chunk
          ? plan_session_choosing_delta_chunk(o.sel.model, o.sel.shape, o.lora, request)
          : plan_session(o.sel.model, o.sel.shape, o.lora, request);
  o.sel.shape = planned.shape;
  const Graph g = build_training_model(o.sel.model, o.sel.shape, o.lora);
  const Plan p = std::move(planned.plan);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const SessionMemory memory = session_memory(p, o.sel.shape.loss_chunk, binding_limit);
  const std::vector<Row> rows = policy_table(g, o);
  const std::optional<LoraSummary> lora = lora_summary(g, o);
  if (o.json)
    print_json(o, p, rows, ms, lora, memory, data);
  else
    print_human(o, p, rows, ms, lora, memory, data);
  if (!o.json && o.objective != "sft")
    std::printf(
        "objective %s: %d %s of 2 rows (batch %d rows), one loss scale per row (%s in the "
        "hyperparameter block); reference log-probs: precomputed (host, 8 bytes per "
        "answer)\n",
        o.objective.c_str(), o.sel.shape.batch / 2, o.objective == "dpo" ? "pairs" : "examples",
        o.sel.shape.batch, format_bytes(uint64_t(o.sel.shape.batch) * o.sel.shape.seq * 4).c_str());
  return 0;
}

}  // namespace remat::cli
