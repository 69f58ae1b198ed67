#include "api/session_params.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "api/error_boundary.h"
#include "planner/policy.h"
#include "runtime/gpt2_weights.h"
#include "runtime/progress.h"

namespace remat::capi {

namespace {

// A size field: 0 keeps the preset's value, negative values are refused by name.
void override_size(int& field, int32_t value, const char* name) {
  if (value < 0)
    invalid(std::string("params->") + name + " is negative (" + std::to_string(value) + ")");
  if (value != 0) field = value;
}

ModelConfig model_of(const remat_session_params& p) {
  ModelConfig m = p.model ? ModelConfig::preset(p.model) : ModelConfig{0, 0, 0, 0, 0};
  override_size(m.layers, p.layers, "layers");
  override_size(m.dim, p.dim, "dim");
  override_size(m.heads, p.heads, "heads");
  override_size(m.vocab, p.vocab, "vocab");
  override_size(m.ctx, p.ctx, "ctx");
  m.validate();
  return m;
}

void require_range(bool ok, const char* field, double value, const char* range) {
  if (!ok)
    invalid(std::string("params->") + field + " is " + std::to_string(value) + "; it must be " +
            range);
}

OptimizerConfig optimizer_of(const remat_session_params& p) {
  auto finite = [](double v) { return std::isfinite(v); };
  require_range(finite(p.learning_rate) && p.learning_rate >= 0, "learning_rate", p.learning_rate,
                "finite and at least 0");
  require_range(finite(p.beta1) && p.beta1 >= 0 && p.beta1 < 1, "beta1", p.beta1, "in [0, 1)");
  require_range(finite(p.beta2) && p.beta2 >= 0 && p.beta2 < 1, "beta2", p.beta2, "in [0, 1)");
  require_range(finite(p.eps) && p.eps > 0, "eps", p.eps, "finite and above 0");
  require_range(finite(p.weight_decay) && p.weight_decay >= 0, "weight_decay", p.weight_decay,
                "finite and at least 0");
  require_range(finite(p.grad_clip) && p.grad_clip >= 0, "grad_clip", p.grad_clip,
                "finite and at least 0 (0: no clipping)");
  OptimizerConfig o;
  o.lr = p.learning_rate;
  o.beta1 = p.beta1;
  o.beta2 = p.beta2;
  o.eps = p.eps;
  o.weight_decay = p.weight_decay;
  o.grad_clip = static_cast<float>(p.grad_clip);
  return o;
}

// NULL: the library's default folder (an empty path); "": no cache file; else the app's folder.
std::optional<std::filesystem::path> pipeline_cache_dir_of(const remat_session_params& p) {
  if (!p.pipeline_cache_dir) return std::filesystem::path();
  if (!*p.pipeline_cache_dir) return std::nullopt;
  return std::filesystem::path(p.pipeline_cache_dir);
}

ProgressFn progress_of(const remat_session_params& p) {
  if (!p.progress) return {};
  return [fn = p.progress, user = p.progress_user](const ProgressEvent& e) {
    const std::string phase(e.phase);  // NUL-terminated for C
    return fn(user, phase.c_str(), e.done, e.total) == 0;
  };
}

LoraSpec lora_of(const remat_session_params& p) {
  LoraSpec l;
  if (p.lora_rank < 0)
    invalid("params->lora_rank is negative (" + std::to_string(p.lora_rank) + ")");
  require_range(std::isfinite(p.lora_alpha) && p.lora_alpha >= 0, "lora_alpha", p.lora_alpha,
                "finite and at least 0 (0: twice lora_rank)");
  if (p.lora_rank == 0) {
    if (p.lora_alpha != 0 || p.lora_targets)
      invalid("params->lora_alpha and lora_targets need params->lora_rank");
    return l;
  }
  l.rank = p.lora_rank;
  l.alpha = p.lora_alpha;
  if (p.lora_targets) l.targets = parse_lora_targets(p.lora_targets);
  return l;
}

}  // namespace

void require_params(const remat_session_params* params) {
  if (params && params->struct_size == kParamsSizeBeforeLora) return;
  require_struct(params, "params");
}

void fill_default_params(remat_session_params& p) {
  p = remat_session_params{};
  p.struct_size = sizeof(remat_session_params);
  p.model = "tiny";
  const TrainShape shape;
  const OptimizerConfig adam;
  p.batch = shape.batch;
  p.seq = shape.seq;
  p.accum = 1;
  p.learning_rate = adam.lr;
  p.beta1 = adam.beta1;
  p.beta2 = adam.beta2;
  p.eps = adam.eps;
  p.weight_decay = adam.weight_decay;
  p.grad_clip = adam.grad_clip;
}

SessionConfig session_config(const remat_session_params* params) {
  require_params(params);
  // An older, shorter struct: its fields over the defaults of the ones it lacks.
  remat_session_params p;
  fill_default_params(p);
  std::memcpy(&p, params, params->struct_size);
  SessionConfig c;
  c.model = model_of(p);
  if (p.batch <= 0 || p.seq <= 0 || p.accum <= 0)
    invalid("params->batch, seq and accum must be at least 1 (got " + std::to_string(p.batch) +
            ", " + std::to_string(p.seq) + ", " + std::to_string(p.accum) + ")");
  c.shape.batch = p.batch;
  c.shape.seq = p.seq;
  c.shape.validate(c.model);
  c.accum = p.accum;
  if (p.arena_bytes != 0) c.arena_budget = p.arena_bytes;
  c.policy = p.policy ? Policy::parse(p.policy)
                      : Policy{c.arena_budget ? Policy::Kind::automatic : Policy::Kind::none, 0};
  if (c.policy.kind == Policy::Kind::automatic && !c.arena_budget)
    invalid("policy 'auto' needs params->arena_bytes (the arena cap it plans for)");
  c.optimizer = optimizer_of(p);
  c.seed = p.seed;
  c.lora = lora_of(p);
  c.pipeline_cache_dir = pipeline_cache_dir_of(p);
  c.progress = progress_of(p);
  return c;
}

void set_model_from_checkpoint(remat_session_params& params, const SafetensorsContents& file) {
  const ModelConfig m = infer_gpt2_config(file, std::nullopt);
  params.model = nullptr;
  params.layers = m.layers;
  params.dim = m.dim;
  params.heads = m.heads;
  params.vocab = m.vocab;
  params.ctx = m.ctx;
}

}  // namespace remat::capi
