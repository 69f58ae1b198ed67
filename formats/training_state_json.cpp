#include "formats/training_state_json.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "base/json.h"
#include "base/json_writer.h"

namespace remat {
namespace {

void write_model(JsonWriter& j, const ModelConfig& m) {
  j.key("model").begin_object();
  j.field("arch", architecture_name(m.arch))
      .field("layers", m.layers)
      .field("dim", m.dim)
      .field("heads", m.heads)
      .field("vocab", m.vocab)
      .field("ctx", m.ctx)
      .field("kv_heads", m.kv_heads)
      .field("ffn", m.ffn)
      .field("rope_theta", double(m.rope_theta))
      .field("norm_eps", double(m.norm_eps))
      .field("tied_head", m.tied_head)
      .field("qkv_bias", m.qkv_bias)
      .field("rope_scaling", m.rope_scaling == RopeScaling::none ? "none" : "llama3")
      .field("head_size", m.head_size)
      .field("qk_norm", m.qk_norm);
  if (m.gemma3) {
    j.key("gemma3").begin_object();
    j.field("sliding_window", m.gemma.sliding_window)
        .field("pattern", m.gemma.pattern)
        .field("local_rope_theta", double(m.gemma.local_rope_theta))
        .field("query_scalar", double(m.gemma.query_scalar))
        .field("rope_linear", double(m.gemma.rope_linear));
    j.end_object();
  }
  if (m.qwen35) {
    const Qwen35Layers& q = m.qwen35_layers;
    j.key("qwen35").begin_object();
    j.field("full_attention_interval", q.full_attention_interval)
        .field("linear_key_heads", q.linear_key_heads)
        .field("linear_value_heads", q.linear_value_heads)
        .field("linear_key_head_dim", q.linear_key_head_dim)
        .field("linear_value_head_dim", q.linear_value_head_dim)
        .field("conv_kernel", q.conv_kernel)
        .field("partial_rotary", double(q.partial_rotary))
        .field("mtp_layers", q.mtp_layers)
        .field("mrope_interleaved", q.mrope_interleaved);
    j.key("mrope_section").begin_array();
    for (int s : q.mrope_section) j.value(s);
    j.end_array();
    j.end_object();
  }
  if (m.rope_scaling == RopeScaling::llama3) {
    j.key("llama3").begin_object();
    j.field("factor", double(m.llama3.factor))
        .field("low_freq_factor", double(m.llama3.low_freq_factor))
        .field("high_freq_factor", double(m.llama3.high_freq_factor))
        .field("original_ctx", m.llama3.original_ctx);
    j.end_object();
  }
  // Absent for transformers 4's keys, so that states of every other model read as before.
  if (m.config_keys.keys == HfKeys::transformers5) j.field("config_keys", "transformers5");
  j.end_object();
}

void write_run(JsonWriter& j, const RunRecord& run) {
  j.key("files").begin_object();
  for (const auto& [name, f] : run.files) {
    j.key(name).begin_object();
    j.field("path", f.path.string())
        .field("bytes", f.bytes)
        .field("fnv1a64w", hash_hex(f.fnv1a64w));
    j.end_object();
  }
  j.end_object();
  j.key("settings").begin_object();
  for (const auto& [name, value] : run.settings) j.field(name, value);
  j.end_object();
}

// Typed access to one JSON object's members, each error naming the file and the member's path.
class Fields {
 public:
  Fields(const JsonValue& object, std::string origin, std::string path)
      : object_(object), origin_(std::move(origin)), path_(std::move(path)) {
    if (object.type != JsonValue::Type::object)
      fail(path_.empty() ? "the text" : path_, "an object");
  }

  const JsonValue& get(const std::string& key, JsonValue::Type type, const char* what) const {
    const JsonValue* v = object_.find(key);
    if (!v) throw std::invalid_argument(origin_ + ": \"" + name(key) + "\" is missing");
    if (v->type != type) fail(name(key), what);
    return *v;
  }
  Fields object(const std::string& key) const {
    return Fields(get(key, JsonValue::Type::object, "an object"), origin_, name(key));
  }
  double number(const std::string& key) const {
    return get(key, JsonValue::Type::number, "a number").number;
  }
  // A whole number in [lo, hi].
  int64_t integer(const std::string& key, int64_t lo, int64_t hi) const {
    const double v = number(key);
    if (!(v >= double(lo) && v <= double(hi)) || v != std::floor(v))
      fail(name(key), "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<int64_t>(v);
  }
  bool has(const std::string& key) const { return object_.find(key) != nullptr; }
  int size(const std::string& key) const {
    return static_cast<int>(integer(key, 0, std::numeric_limits<int>::max()));
  }
  const std::string& string(const std::string& key) const {
    return get(key, JsonValue::Type::string, "a string").string;
  }
  bool boolean(const std::string& key) const {
    return get(key, JsonValue::Type::boolean, "true or false").boolean;
  }
  uint64_t hash(const std::string& key) const {
    const std::string& text = string(key);
    try {
      return parse_hash_hex(text, "\"" + name(key) + "\"");
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(origin_ + ": " + e.what());
    }
  }
  const JsonValue& value() const { return object_; }
  [[noreturn]] void fail(const std::string& what, const std::string& expected) const {
    throw std::invalid_argument(origin_ + ": \"" + what + "\" must be " + expected);
  }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  const JsonValue& object_;
  std::string origin_;
  std::string path_;
};

// Qwen3.5's layers (ModelConfig::qwen35); absent for every other model.
Qwen35Layers read_qwen35_layers(const Fields& q, ModelConfig& m) {
  m.qwen35 = true;
  Qwen35Layers l;
  l.full_attention_interval = q.size("full_attention_interval");
  l.linear_key_heads = q.size("linear_key_heads");
  l.linear_value_heads = q.size("linear_value_heads");
  l.linear_key_head_dim = q.size("linear_key_head_dim");
  l.linear_value_head_dim = q.size("linear_value_head_dim");
  l.conv_kernel = q.size("conv_kernel");
  l.partial_rotary = static_cast<float>(q.number("partial_rotary"));
  l.mtp_layers = q.size("mtp_layers");
  l.mrope_interleaved = q.boolean("mrope_interleaved");
  const JsonValue& section = q.get("mrope_section", JsonValue::Type::array, "an array");
  if (section.array.size() != l.mrope_section.size())
    q.fail(q.name("mrope_section"), "three whole numbers");
  for (std::size_t i = 0; i < section.array.size(); ++i) {
    const JsonValue& v = section.array[i];
    if (v.type != JsonValue::Type::number || !(v.number >= 0 && v.number <= 1 << 20) ||
        v.number != std::floor(v.number))
      q.fail(q.name("mrope_section"), "three whole numbers");
    l.mrope_section[i] = static_cast<int>(v.number);
  }
  return l;
}

ModelConfig read_model(const Fields& f) {
  ModelConfig m;
  const std::string& arch = f.string("arch");
  if (arch != "gpt2" && arch != "llama") f.fail(f.name("arch"), "\"gpt2\" or \"llama\"");
  m.arch = arch == "gpt2" ? Architecture::gpt2 : Architecture::llama;
  m.layers = f.size("layers");
  m.dim = f.size("dim");
  m.heads = f.size("heads");
  m.vocab = f.size("vocab");
  m.ctx = f.size("ctx");
  m.kv_heads = f.size("kv_heads");
  m.ffn = f.size("ffn");
  m.rope_theta = static_cast<float>(f.number("rope_theta"));
  m.norm_eps = static_cast<float>(f.number("norm_eps"));
  m.tied_head = f.boolean("tied_head");
  m.qkv_bias = f.boolean("qkv_bias");
  const std::string& scaling = f.string("rope_scaling");
  if (scaling != "none" && scaling != "llama3")
    f.fail(f.name("rope_scaling"), "\"none\" or \"llama3\"");
  m.rope_scaling = scaling == "none" ? RopeScaling::none : RopeScaling::llama3;
  // States written before Qwen3 and trained llama3 scaling lack these: the defaults are theirs.
  if (f.has("head_size")) m.head_size = f.size("head_size");
  if (f.has("qk_norm")) m.qk_norm = f.boolean("qk_norm");
  if (m.rope_scaling == RopeScaling::llama3) {
    const Fields l = f.object("llama3");
    m.llama3.factor = static_cast<float>(l.number("factor"));
    m.llama3.low_freq_factor = static_cast<float>(l.number("low_freq_factor"));
    m.llama3.high_freq_factor = static_cast<float>(l.number("high_freq_factor"));
    m.llama3.original_ctx = l.size("original_ctx");
  }
  if (f.has("gemma3")) {  // Gemma 3's layers; absent for every other model
    const Fields g = f.object("gemma3");
    m.gemma3 = true;
    m.gemma.sliding_window = g.size("sliding_window");
    m.gemma.pattern = g.size("pattern");
    m.gemma.local_rope_theta = static_cast<float>(g.number("local_rope_theta"));
    m.gemma.query_scalar = static_cast<float>(g.number("query_scalar"));
    m.gemma.rope_linear = static_cast<float>(g.number("rope_linear"));
  }
  if (f.has("qwen35")) m.qwen35_layers = read_qwen35_layers(f.object("qwen35"), m);
  // The spelling a model's config.json had, so that a resumed run saves it the same way.
  if (f.has("config_keys")) {
    const std::string& keys = f.string("config_keys");
    if (keys != "transformers4" && keys != "transformers5")
      f.fail(f.name("config_keys"), "\"transformers4\" or \"transformers5\"");
    m.config_keys.keys = keys == "transformers5" ? HfKeys::transformers5 : HfKeys::transformers4;
  }
  return m;
}

RunRecord read_run(const Fields& run) {
  RunRecord r;
  const Fields files = run.object("files");
  for (const auto& [name, value] : files.value().object) {
    const Fields file = files.object(name);
    FileIdentity id;
    id.path = file.string("path");
    id.bytes = static_cast<uint64_t>(file.integer("bytes", 0, int64_t(1) << 53));
    id.fnv1a64w = file.hash("fnv1a64w");
    r.files[name] = id;
  }
  const Fields settings = run.object("settings");
  for (const auto& [name, value] : settings.value().object)
    r.settings[name] = settings.string(name);
  return r;
}

// The library's own message, prefixed with the file it came from.
template <class F>
void checked(const std::string& origin, F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(origin + ": " + e.what());
  }
}

}  // namespace

std::string training_state_json(const TrainingState& s) {
  JsonWriter j(2);
  j.begin_object();
  j.field("format", s.format).field("step", s.step);
  write_model(j, s.model);
  j.key("shape").begin_object();
  j.field("batch", s.shape.batch)
      .field("seq", s.shape.seq)
      .field("dropout", double(s.shape.dropout))
      .field("loss_chunk", s.shape.loss_chunk)
      .field("act_dtype", dtype_name(s.shape.activation_dtype))
      .field("accum", s.accum);
  // Only when packed, so that other states read as they always did.
  if (s.shape.packed) j.field("packed", true);
  // Likewise a preference objective's per-row loss scales (graph/model_config.h).
  if (s.shape.row_loss_scales) j.field("row_loss_scales", true);
  j.end_object();
  // A string: JSON numbers are exact only up to 2^53, seeds take 64 bits.
  j.field("seed", std::to_string(s.seed));
  j.field("policy", s.policy.to_string()).field("arena_bytes", s.arena_budget);
  j.key("optimizer").begin_object();
  j.field("lr", s.optimizer.lr)
      .field("beta1", s.optimizer.beta1)
      .field("beta2", s.optimizer.beta2)
      .field("eps", s.optimizer.eps)
      .field("weight_decay", s.optimizer.weight_decay)
      .field("grad_clip", double(s.optimizer.grad_clip));
  j.end_object();
  j.key("schedule").begin_object();
  j.field("kind", lr_decay_name(s.schedule.decay))
      .field("warmup_steps", s.schedule.warmup_steps)
      .field("total_steps", s.schedule.total_steps)
      .field("min_lr_ratio", s.schedule.min_lr_ratio);
  j.end_object();
  j.key("run").begin_object();
  write_run(j, s.run);
  j.end_object();
  j.key("tensors").begin_object();
  j.key("params.safetensors").begin_object().field("data_fnv1a64w", hash_hex(s.params_hash));
  j.end_object();
  j.key("optimizer.safetensors").begin_object().field("data_fnv1a64w", hash_hex(s.optimizer_hash));
  j.end_object();
  j.end_object();
  j.end_object();
  return j.str() + "\n";
}

TrainingState parse_training_state(std::string_view text, const std::string& origin) {
  JsonValue root;
  checked(origin, [&] { root = parse_json(text); });
  const Fields f(root, origin, "");
  TrainingState s;
  s.format = static_cast<int>(f.integer("format", 1, 1000000));
  if (s.format > kTrainingStateFormat)
    throw std::invalid_argument(origin + ": format " + std::to_string(s.format) +
                                " is newer than this remat reads (" +
                                std::to_string(kTrainingStateFormat) + "); use a newer remat");
  s.step = static_cast<uint32_t>(f.integer("step", 0, std::numeric_limits<uint32_t>::max()));
  s.model = read_model(f.object("model"));
  const Fields shape = f.object("shape");
  s.shape.batch = shape.size("batch");
  s.shape.seq = shape.size("seq");
  s.shape.dropout = static_cast<float>(shape.number("dropout"));
  // States written before the head could be chunked have none: their head was whole.
  s.shape.loss_chunk = shape.has("loss_chunk") ? shape.size("loss_chunk") : 0;
  // Likewise activations stored in 16 bits: without the field they were f32.
  if (shape.has("act_dtype"))
    checked(origin,
            [&] { s.shape.activation_dtype = parse_activation_dtype(shape.string("act_dtype")); });
  s.accum = static_cast<int>(shape.integer("accum", 1, 1 << 20));
  s.shape.packed = shape.has("packed") && shape.boolean("packed");
  s.shape.row_loss_scales = shape.has("row_loss_scales") && shape.boolean("row_loss_scales");
  checked(origin, [&] {
    s.model.validate();
    s.shape.validate(s.model);
  });
  const std::string& seed = f.string("seed");
  if (seed.empty() || seed.size() > 20 || seed.find_first_not_of("0123456789") != seed.npos)
    f.fail("seed", "a decimal string");
  s.seed = std::stoull(seed);
  checked(origin, [&] { s.policy = Policy::parse(f.string("policy")); });
  const JsonValue* arena = root.find("arena_bytes");
  if (arena && arena->type != JsonValue::Type::null)
    s.arena_budget = static_cast<uint64_t>(f.integer("arena_bytes", 1, int64_t(1) << 53));
  const Fields opt = f.object("optimizer");
  s.optimizer.lr = opt.number("lr");
  s.optimizer.beta1 = opt.number("beta1");
  s.optimizer.beta2 = opt.number("beta2");
  s.optimizer.eps = opt.number("eps");
  s.optimizer.weight_decay = opt.number("weight_decay");
  s.optimizer.grad_clip = static_cast<float>(opt.number("grad_clip"));
  const auto& o = s.optimizer;
  if (!(o.lr >= 0 && std::isfinite(o.lr))) opt.fail("optimizer.lr", "finite and at least 0");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) opt.fail("optimizer.beta1", "in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) opt.fail("optimizer.beta2", "in [0, 1)");
  if (!(o.eps > 0 && std::isfinite(o.eps))) opt.fail("optimizer.eps", "finite and above 0");
  if (!(o.weight_decay >= 0 && std::isfinite(o.weight_decay)))
    opt.fail("optimizer.weight_decay", "finite and at least 0");
  if (!(o.grad_clip >= 0 && std::isfinite(o.grad_clip)))
    opt.fail("optimizer.grad_clip", "finite and at least 0");
  const Fields sched = f.object("schedule");
  checked(origin, [&] { s.schedule.decay = parse_lr_decay(sched.string("kind")); });
  s.schedule.warmup_steps = sched.integer("warmup_steps", 0, int64_t(1) << 53);
  s.schedule.total_steps = sched.integer("total_steps", 0, int64_t(1) << 53);
  s.schedule.min_lr_ratio = sched.number("min_lr_ratio");
  s.schedule.base_lr = s.optimizer.lr;
  checked(origin, [&] { validate(s.schedule); });
  s.run = read_run(f.object("run"));
  const Fields tensors = f.object("tensors");
  s.params_hash = tensors.object("params.safetensors").hash("data_fnv1a64w");
  s.optimizer_hash = tensors.object("optimizer.safetensors").hash("data_fnv1a64w");
  return s;
}

}  // namespace remat
