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
#include "base/progress.h"
#include "formats/base_blocks.h"
#include "formats/model_metadata.h"
#include "formats/weight_files.h"
#include "graph/model_builder.h"
#include "planner/policy.h"

namespace remat::capi {

namespace {

// A size field: 0 keeps the preset's value, negative values are refused by name.
void override_size(int& field, int32_t value, const char* name) {
  if (value < 0)
    invalid(std::string("params->") + name + " is negative (" + std::to_string(value) + ")");
  if (value != 0) field = value;
}

void require_range(bool ok, const char* field, double value, const char* range) {
  if (!ok)
    invalid(std::string("params->") + field + " is " + std::to_string(value) + "; it must be " +
            range);
}

// Whether every family field is 0, as REMAT_FAMILY_PRESET and REMAT_FAMILY_GPT2 require.
bool family_fields_zero(const remat_session_params& p) {
  return p.kv_heads == 0 && p.ffn == 0 && p.head_dim == 0 && p.rope_theta == 0 && p.norm_eps == 0 &&
         p.tied_head == 0 && p.qkv_bias == 0 && p.qk_norm == 0 && p.rope_scaling == 0 &&
         p.rope_factor == 0 && p.rope_low_freq_factor == 0 && p.rope_high_freq_factor == 0 &&
         p.rope_original_ctx == 0 && p.sliding_window == 0 && p.sliding_window_pattern == 0 &&
         p.rope_local_theta == 0 && p.query_pre_attn_scalar == 0;
}

// Whether the Gemma 3 fields are all 0, as every family but REMAT_FAMILY_GEMMA3 requires.
bool gemma_fields_zero(const remat_session_params& p) {
  return p.sliding_window == 0 && p.sliding_window_pattern == 0 && p.rope_local_theta == 0 &&
         p.query_pre_attn_scalar == 0;
}

// A double field as the float ModelConfig keeps; 0 is `fallback`.
float float_field(double value, const char* name, float fallback) {
  require_range(std::isfinite(value) && value >= 0, name, value, "finite and at least 0");
  return value == 0 ? fallback : static_cast<float>(value);
}

Llama3Scaling llama3_of(const remat_session_params& p) {
  if (p.rope_scaling == REMAT_ROPE_NONE) {
    if (p.rope_factor != 0 || p.rope_low_freq_factor != 0 || p.rope_high_freq_factor != 0 ||
        p.rope_original_ctx != 0)
      invalid(
          "params->rope_factor, rope_low_freq_factor, rope_high_freq_factor and "
          "rope_original_ctx need params->rope_scaling REMAT_ROPE_LLAMA3");
    return {};
  }
  if (p.rope_scaling != REMAT_ROPE_LLAMA3)
    invalid("params->rope_scaling is " + std::to_string(p.rope_scaling) +
            "; use REMAT_ROPE_NONE or REMAT_ROPE_LLAMA3");
  Llama3Scaling s;
  s.factor = float_field(p.rope_factor, "rope_factor", 0.0f);
  s.low_freq_factor = float_field(p.rope_low_freq_factor, "rope_low_freq_factor", 0.0f);
  s.high_freq_factor = float_field(p.rope_high_freq_factor, "rope_high_freq_factor", 0.0f);
  s.original_ctx = p.rope_original_ctx;
  return s;
}

// The family fields of `m` as the struct's REMAT_FAMILY_LLAMA reads them (ModelConfig::validate
// then checks sizes and combinations).
void set_llama_fields(ModelConfig& m, const remat_session_params& p) {
  const ModelConfig gpt2;  // the defaults a 0 field stands for
  m.arch = Architecture::llama;
  override_size(m.kv_heads = 0, p.kv_heads, "kv_heads");
  override_size(m.ffn = 0, p.ffn, "ffn");
  override_size(m.head_size = 0, p.head_dim, "head_dim");
  m.rope_theta = float_field(p.rope_theta, "rope_theta", gpt2.rope_theta);
  m.norm_eps = float_field(p.norm_eps, "norm_eps", gpt2.norm_eps);
  m.tied_head = p.tied_head != 0;
  m.qkv_bias = p.qkv_bias != 0;
  m.qk_norm = p.qk_norm != 0;
  m.llama3 = llama3_of(p);
  m.rope_scaling = p.rope_scaling == REMAT_ROPE_LLAMA3 ? RopeScaling::llama3 : RopeScaling::none;
}

// Gemma 3: the Llama family's fields with q/k norms and a tied head, and its own four.
void set_gemma3_fields(ModelConfig& m, const remat_session_params& p) {
  remat_session_params llama = p;  // Gemma's linear RoPE scaling is not the Llama family's
  if (p.rope_scaling == REMAT_ROPE_LINEAR) llama.rope_scaling = 0, llama.rope_factor = 0;
  set_llama_fields(m, llama);
  if (p.rope_scaling == REMAT_ROPE_LINEAR) {
    require_range(p.rope_factor > 0 && std::isfinite(p.rope_factor), "rope_factor", p.rope_factor,
                  "positive with REMAT_ROPE_LINEAR");
    m.gemma.rope_linear = static_cast<float>(p.rope_factor);
  }
  m.gemma3 = true;
  m.qk_norm = true;
  m.tied_head = true;
  override_size(m.gemma.sliding_window = 0, p.sliding_window, "sliding_window");
  override_size(m.gemma.pattern = 0, p.sliding_window_pattern, "sliding_window_pattern");
  m.gemma.local_rope_theta = float_field(p.rope_local_theta, "rope_local_theta", 10000.0f);
  m.gemma.query_scalar = float_field(p.query_pre_attn_scalar, "query_pre_attn_scalar",
                                     static_cast<float>(m.head_dim()));
}

// How a saved folder's config.json is spelled (formats/hf_rope.h).
HfKeys config_keys_of(const remat_session_params& p) {
  if (p.config_keys != REMAT_CONFIG_KEYS_TRANSFORMERS4 &&
      p.config_keys != REMAT_CONFIG_KEYS_TRANSFORMERS5)
    invalid("params->config_keys is " + std::to_string(p.config_keys) +
            "; use REMAT_CONFIG_KEYS_TRANSFORMERS4 or REMAT_CONFIG_KEYS_TRANSFORMERS5");
  return p.config_keys == REMAT_CONFIG_KEYS_TRANSFORMERS5 ? HfKeys::transformers5
                                                          : HfKeys::transformers4;
}

// The preset (or GPT-2) with the five size overrides, then the family the struct names.
ModelConfig model_of(const remat_session_params& p) {
  ModelConfig m = p.model ? ModelConfig::preset(p.model) : ModelConfig{0, 0, 0, 0, 0};
  override_size(m.layers, p.layers, "layers");
  override_size(m.dim, p.dim, "dim");
  override_size(m.heads, p.heads, "heads");
  override_size(m.vocab, p.vocab, "vocab");
  override_size(m.ctx, p.ctx, "ctx");
  switch (p.family) {
    case REMAT_FAMILY_PRESET:
    case REMAT_FAMILY_GPT2:
      if (!family_fields_zero(p))
        invalid(std::string("params->family is ") +
                (p.family == REMAT_FAMILY_GPT2 ? "REMAT_FAMILY_GPT2" : "REMAT_FAMILY_PRESET") +
                ": the family fields (kv_heads ... query_pre_attn_scalar) must be 0");
      // GPT-2 whatever the preset: its sizes, every family field at GPT-2's default.
      if (p.family == REMAT_FAMILY_GPT2) m = ModelConfig{m.layers, m.dim, m.heads, m.vocab, m.ctx};
      break;
    case REMAT_FAMILY_LLAMA:
      if (!gemma_fields_zero(p))
        invalid(
            "params->family is REMAT_FAMILY_LLAMA: the Gemma 3 fields (sliding_window ... "
            "query_pre_attn_scalar) must be 0");
      set_llama_fields(m, p);
      break;
    case REMAT_FAMILY_GEMMA3:
      set_gemma3_fields(m, p);
      break;
    default:
      invalid("params->family is " + std::to_string(p.family) +
              "; use REMAT_FAMILY_PRESET, REMAT_FAMILY_GPT2, REMAT_FAMILY_LLAMA or "
              "REMAT_FAMILY_GEMMA3");
  }
  m.validate();
  m.config_keys.keys = config_keys_of(p);
  return m;
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
}

// The sizes of older structs this library still reads: remat 0.2's, which ends before the
// schedule, the one that ends before the LoRA fields, the ones that end before loss_chunk and
// before memory_bytes, and the ones that end before weights_dtype, act_dtype, packed,
// quantized_base, family, config_keys and base_blocks.
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
         size == offsetof(remat_session_params, base_blocks);
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
  c.pipeline_cache_dir = pipeline_cache_dir_of(p);
  c.progress = progress_of(p);
  return c;
}

void set_model_from_checkpoint(remat_session_params& params, const SafetensorsContents& file) {
  set_model(params, safetensors_model(file, std::nullopt), "the checkpoint");
}

void set_model(remat_session_params& params, const ModelConfig& m, const std::string& origin) {
  // An older struct is read and written up to its own size only; it has no family fields.
  const std::size_t size = params.struct_size;
  const bool has_family = size > offsetof(remat_session_params, family);
  // The params have no Qwen3.5 fields: such a model is named by its preset (`model`).
  if (m.qwen35)
    invalid(origin +
            " holds a Qwen3.5 model, which remat_session_params has no fields for; name a "
            "Qwen3.5 preset in `model` instead");
  if (!has_family && m.arch != Architecture::gpt2)
    invalid(origin + " holds a " + std::string(architecture_name(m.arch)) +
            "-family model; a remat_session_params that ends before `family` describes GPT-2 "
            "models only");
  const bool has_gemma = size > offsetof(remat_session_params, sliding_window);
  if (!has_gemma && m.gemma3)
    invalid(origin +
            " holds a Gemma 3 model; a remat_session_params that ends before "
            "`sliding_window` cannot describe it");
  remat_session_params p = read_params(&params);
  p.model = nullptr;
  p.layers = m.layers;
  p.dim = m.dim;
  p.heads = m.heads;
  p.vocab = m.vocab;
  p.ctx = m.ctx;
  const bool llama = m.arch == Architecture::llama;
  p.family = m.gemma3 ? REMAT_FAMILY_GEMMA3 : llama ? REMAT_FAMILY_LLAMA : REMAT_FAMILY_GPT2;
  p.kv_heads = llama ? m.kv_heads : 0;
  p.ffn = llama ? m.ffn : 0;
  p.head_dim = llama ? m.head_size : 0;
  p.rope_theta = llama ? m.rope_theta : 0.0;
  p.norm_eps = llama ? m.norm_eps : 0.0;
  p.tied_head = llama && m.tied_head;
  p.qkv_bias = llama && m.qkv_bias;
  p.qk_norm = llama && m.qk_norm;
  const bool llama3 = llama && m.rope_scaling == RopeScaling::llama3;
  const bool linear = m.gemma3 && m.gemma.rope_linear != 0.0f;
  p.rope_scaling = llama3 ? REMAT_ROPE_LLAMA3 : linear ? REMAT_ROPE_LINEAR : REMAT_ROPE_NONE;
  p.rope_factor = llama3 ? m.llama3.factor : linear ? m.gemma.rope_linear : 0.0;
  p.rope_low_freq_factor = llama3 ? m.llama3.low_freq_factor : 0.0;
  p.rope_high_freq_factor = llama3 ? m.llama3.high_freq_factor : 0.0;
  p.rope_original_ctx = llama3 ? m.llama3.original_ctx : 0;
  p.sliding_window = m.gemma3 ? m.gemma.sliding_window : 0;
  p.sliding_window_pattern = m.gemma3 ? m.gemma.pattern : 0;
  p.rope_local_theta = m.gemma3 ? m.gemma.local_rope_theta : 0.0;
  p.query_pre_attn_scalar = m.gemma3 ? m.gemma.query_scalar : 0.0;
  // Written only into a struct that has it (the copy below stops at the struct's size).
  p.config_keys = m.config_keys.keys == HfKeys::transformers5 ? REMAT_CONFIG_KEYS_TRANSFORMERS5
                                                              : REMAT_CONFIG_KEYS_TRANSFORMERS4;
  // Every model remat builds has a description; the check guards that promise.
  if (!(model_of(p) == m))
    invalid(origin + " holds a model remat_session_params does not describe exactly");
  p.struct_size = size;
  std::memcpy(&params, &p, size);
}

}  // namespace remat::capi
