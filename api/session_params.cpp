#include "api/session_params.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "api/error_boundary.h"
#include "api/model_fields.h"
#include "base/progress.h"
#include "formats/base_blocks.h"
#include "formats/model_metadata.h"
#include "formats/weight_files.h"
#include "graph/delta_rule_workspace.h"
#include "graph/model_builder.h"
#include "planner/policy.h"
#include "runtime/preference_session.h"

namespace remat::capi {

namespace {

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

LrSchedule schedule_of(const remat_session_params& p) {
  LrSchedule s;
  switch (p.lr_schedule) {
    case REMAT_LR_CONSTANT:
      s.decay = LrDecay::constant;
      break;
    case REMAT_LR_LINEAR:
      s.decay = LrDecay::linear;
      break;
    case REMAT_LR_COSINE:
      s.decay = LrDecay::cosine;
      break;
    default:
      invalid("params->lr_schedule is " + std::to_string(p.lr_schedule) +
              "; use REMAT_LR_CONSTANT, REMAT_LR_LINEAR or REMAT_LR_COSINE");
  }
  require_range(p.warmup_steps >= 0, "warmup_steps", double(p.warmup_steps), "at least 0");
  require_range(p.total_steps >= 0, "total_steps", double(p.total_steps), "at least 0");
  require_range(std::isfinite(p.min_lr_ratio) && p.min_lr_ratio >= 0 && p.min_lr_ratio <= 1,
                "min_lr_ratio", p.min_lr_ratio, "in [0, 1]");
  s.warmup_steps = p.warmup_steps;
  s.total_steps = p.total_steps;
  s.min_lr_ratio = p.min_lr_ratio;
  s.base_lr = p.learning_rate;
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    invalid(std::string("params: ") + e.what());
  }
  return s;
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

// 0: whole logits; positive: rows per chunk, as TrainShape::validate allows. -1 (auto) is
// chosen when the session plans (SessionConfig::choose_loss_chunk), where the device's binding
// limit is known.
int loss_chunk_of(const remat_session_params& p, const SessionConfig& c) {
  if (p.loss_chunk < 0)
    invalid("params->loss_chunk is " + std::to_string(p.loss_chunk) +
            "; use 0 (whole logits), a positive multiple of " + std::to_string(kLossChunkAlign) +
            " rows, or -1 (REMAT_LOSS_CHUNK_AUTO)");
  TrainShape shape = c.shape;
  shape.loss_chunk = p.loss_chunk;
  try {
    shape.validate(c.model);
  } catch (const std::invalid_argument& e) {
    invalid(std::string("params->loss_chunk: ") + e.what());
  }
  return p.loss_chunk;
}

// Qwen3.5's recurrence chunks: REMAT_DELTA_CHUNK_AUTO is chosen when the session plans, as the
// CLI's --delta-chunk auto (runtime/session.h); any other model has no recurrence to cut.
void set_delta_chunk(SessionConfig& c, int32_t delta_chunk) {
  if (delta_chunk < REMAT_DELTA_CHUNK_AUTO)
    invalid("params->delta_chunk is " + std::to_string(delta_chunk) +
            "; use 0 (one chunk), a positive number of tokens or -1 (REMAT_DELTA_CHUNK_AUTO)");
  if (delta_chunk > 0 && !c.model.qwen35)
    invalid("params->delta_chunk is for Qwen3.5 models (Gated DeltaNet layers): set 0 or -1");
  if (delta_chunk > 0)
    if (const char* why = delta_chunk_refusal(delta_chunk); *why != '\0')
      invalid("params->delta_chunk " + std::string(why) + " (or -1, REMAT_DELTA_CHUNK_AUTO), got " +
              std::to_string(delta_chunk));
  c.choose_delta_chunk = delta_chunk == REMAT_DELTA_CHUNK_AUTO && c.model.qwen35;
  if (delta_chunk > 0) c.shape.delta_chunk = delta_chunk;
}

// A remat_dtype field (weights_dtype, act_dtype) as the storage type it names.
DType dtype_of(int32_t value, const char* field) {
  switch (value) {
    case REMAT_DTYPE_F32:
      return DType::f32;
    case REMAT_DTYPE_F16:
      return DType::f16;
    case REMAT_DTYPE_BF16:
      return DType::bf16;
    default:
      invalid(std::string("params->") + field + " is " + std::to_string(value) +
              "; use REMAT_DTYPE_F32, REMAT_DTYPE_F16 or REMAT_DTYPE_BF16");
  }
}

int32_t remat_dtype_of(DType t) {
  return t == DType::f16 ? REMAT_DTYPE_F16 : t == DType::bf16 ? REMAT_DTYPE_BF16 : REMAT_DTYPE_F32;
}

}  // namespace

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
  p.lr_schedule = REMAT_LR_CONSTANT;
  // Whole logits wherever they fit the device (every session that ran with 0 plans the same),
  // else the largest chunk that does.
  p.loss_chunk = REMAT_LOSS_CHUNK_AUTO;
  // Qwen3.5's recurrence in the chunks `remat train` and `remat plan` choose by default.
  p.delta_chunk = REMAT_DELTA_CHUNK_AUTO;
}

// The sizes of older structs this library still reads: remat 0.2's, which ends before the
// schedule, the one that ends before the LoRA fields, the ones that end before loss_chunk and
// before memory_bytes, and the ones that end before weights_dtype, act_dtype, packed,
// quantized_base, family, config_keys, base_blocks, preference and the Qwen3.5 fields.
static bool older_params_size(std::size_t size) {
  return size == offsetof(remat_session_params, lr_schedule) ||
         size == offsetof(remat_session_params, lora_rank) ||
         size == offsetof(remat_session_params, loss_chunk) ||
         size == offsetof(remat_session_params, memory_bytes) ||
         size == offsetof(remat_session_params, weights_dtype) ||
         size == offsetof(remat_session_params, act_dtype) ||
         size == offsetof(remat_session_params, packed) ||
         size == offsetof(remat_session_params, quantized_base) ||
         size == offsetof(remat_session_params, family) ||
         size == offsetof(remat_session_params, sliding_window) ||
         size == offsetof(remat_session_params, config_keys) ||
         size == offsetof(remat_session_params, base_blocks) ||
         size == offsetof(remat_session_params, preference) ||
         size == offsetof(remat_session_params, full_attention_interval);
}

remat_session_params read_params(const remat_session_params* params) {
  if (params == nullptr) invalid("params is NULL");
  if (!older_params_size(params->struct_size)) {
    require_struct(params, "params");
    return *params;
  }
  // The fields an older struct lacks keep their defaults.
  remat_session_params p;
  fill_default_params(p);
  std::memcpy(&p, params, params->struct_size);
  p.struct_size = sizeof p;
  return p;
}

void require_params(const remat_session_params* params) {
  if (params && older_params_size(params->struct_size)) return;
  require_struct(params, "params");
}

void set_from_state(remat_session_params& p, const TrainingState& st) {
  if (st.shape.dropout != 0)
    invalid("the state's run uses dropout " + std::to_string(st.shape.dropout) +
            ", which sessions of the C API do not have");
  set_model(p, st.model, "the state");
  p.batch = st.shape.batch;
  p.seq = st.shape.seq;
  p.accum = st.accum;
  p.seed = st.seed;
  p.policy = nullptr;
  p.arena_bytes = st.arena_budget.value_or(0);
  p.learning_rate = st.optimizer.lr;
  p.beta1 = st.optimizer.beta1;
  p.beta2 = st.optimizer.beta2;
  p.eps = st.optimizer.eps;
  p.weight_decay = st.optimizer.weight_decay;
  p.grad_clip = st.optimizer.grad_clip;
  p.lr_schedule = st.schedule.decay == LrDecay::linear   ? REMAT_LR_LINEAR
                  : st.schedule.decay == LrDecay::cosine ? REMAT_LR_COSINE
                                                         : REMAT_LR_CONSTANT;
  p.warmup_steps = st.schedule.warmup_steps;
  p.total_steps = st.schedule.total_steps;
  p.min_lr_ratio = st.schedule.min_lr_ratio;
  p.loss_chunk = st.shape.loss_chunk;
  p.act_dtype = remat_dtype_of(st.shape.activation_dtype);
  p.packed = st.shape.packed ? 1 : 0;
  // A preference session's shape counts two rows per example; params->batch counts examples.
  if (p.struct_size > offsetof(remat_session_params, preference)) {
    p.preference = st.shape.row_loss_scales ? 1 : 0;
    if (st.shape.row_loss_scales) p.batch = st.shape.batch / 2;
  }
}

namespace {

BaseBlocks base_blocks_of(const remat_session_params& p) {
  switch (p.base_blocks) {
    case REMAT_BASE_BLOCKS_AUTO:
      return BaseBlocks::automatic;
    case REMAT_BASE_BLOCKS_KEEP:
      return BaseBlocks::keep;
    case REMAT_BASE_BLOCKS_DECODE:
      return BaseBlocks::decode;
    default:
      invalid("params->base_blocks is " + std::to_string(p.base_blocks) +
              "; use REMAT_BASE_BLOCKS_AUTO, REMAT_BASE_BLOCKS_KEEP or REMAT_BASE_BLOCKS_DECODE");
  }
}

// The block weights a session keeps of params->quantized_base (a .gguf file):
// formats/base_blocks.h decides, as for the CLI; the checks here name the params' fields.
std::vector<BlockWeight> quantized_base_blocks(const remat_session_params& p,
                                               const SessionConfig& c) {
  const BaseBlocks choice = base_blocks_of(p);
  const char* path = p.quantized_base;
  if (choice != BaseBlocks::automatic && !path)
    invalid("params->base_blocks chooses how params->quantized_base is stored: it needs one");
  if (!path) return {};
  if (!names_gguf_file(path))
    invalid("params->quantized_base '" + std::string(path) + "' is not a .gguf file");
  if (choice == BaseBlocks::keep && !c.lora.enabled())
    invalid("params->quantized_base keeps a frozen base in its blocks: it needs params->lora_rank");
  if (choice == BaseBlocks::decode && !c.lora.enabled())
    invalid(
        "params->base_blocks REMAT_BASE_BLOCKS_DECODE decodes a frozen base: it needs "
        "params->lora_rank");
  if (!c.lora.enabled() || choice == BaseBlocks::decode) return {};
  const WeightFiles w = WeightFiles::open(path);
  if (w.gguf()->model() != c.model)
    invalid("params->quantized_base '" + std::string(path) +
            "' holds another model than the params describe");
  return base_block_weights(std::filesystem::path(path), c.lora, choice);
}

// A copy of `path` that lives as long as the process: what params->quantized_base points to
// after remat_session_params_from_file, whose argument the app may free at once. One copy per
// distinct path, so calling it again and again does not grow.
const char* lasting_copy(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> paths;  // a set's strings never move
  const std::lock_guard<std::mutex> lock(mutex);
  return paths.insert(path).first->c_str();
}

}  // namespace

void set_base_file(remat_session_params& params, const char* checkpoint) {
  if (params.struct_size <= offsetof(remat_session_params, quantized_base)) return;
  params.quantized_base =
      checkpoint && names_gguf_file(checkpoint) ? lasting_copy(checkpoint) : nullptr;
}

SessionConfig session_config(const remat_session_params* params) {
  const remat_session_params p = read_params(params);
  SessionConfig c;
  c.model = model_of(p);
  if (p.batch <= 0 || p.seq <= 0 || p.accum <= 0)
    invalid("params->batch, seq and accum must be at least 1 (got " + std::to_string(p.batch) +
            ", " + std::to_string(p.seq) + ", " + std::to_string(p.accum) + ")");
  c.shape.batch = p.batch;
  c.shape.seq = p.seq;
  c.shape.activation_dtype = dtype_of(p.act_dtype, "act_dtype");
  c.shape.packed = p.packed != 0;
  c.shape.validate(c.model);
  c.accum = p.accum;
  if (p.arena_bytes != 0) c.arena_budget = p.arena_bytes;
  if (p.memory_bytes != 0) c.memory_budget = p.memory_bytes;
  const bool budget = c.arena_budget || c.memory_budget;
  c.policy = p.policy ? Policy::parse(p.policy)
                      : Policy{budget ? Policy::Kind::automatic : Policy::Kind::none, 0};
  if (c.policy.kind == Policy::Kind::automatic && !budget)
    invalid(
        "policy 'auto' needs params->arena_bytes or params->memory_bytes (the cap it plans "
        "for)");
  c.optimizer = optimizer_of(p);
  c.schedule = schedule_of(p);
  c.seed = p.seed;
  c.lora = lora_of(p);
  c.shape.weight_dtype = dtype_of(p.weights_dtype, "weights_dtype");
  if (c.shape.weight_dtype != DType::f32 && !c.lora.enabled())
    invalid("params->weights_dtype applies to frozen weights: it needs params->lora_rank");
  c.shape.block_weights = quantized_base_blocks(p, c);
  if (p.loss_chunk == REMAT_LOSS_CHUNK_AUTO)
    c.choose_loss_chunk = true;
  else
    c.shape.loss_chunk = loss_chunk_of(p, c);
  set_delta_chunk(c, p.delta_chunk);
  c.pipeline_cache_dir = pipeline_cache_dir_of(p);
  c.progress = progress_of(p);
  if (p.preference) {
    if (p.packed) invalid("params->preference rows hold one answer each: params->packed must be 0");
    c = preference_session_config(c, p.batch);
  }
  return c;
}

void set_model_from_checkpoint(remat_session_params& params, const SafetensorsContents& file) {
  set_model(params, safetensors_model(file, std::nullopt), "the checkpoint");
}

}  // namespace remat::capi
