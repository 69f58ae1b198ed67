#include "runtime/lora_weights.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/json.h"
#include "base/json_writer.h"
#include "runtime/gpt2_weights.h"
#include "runtime/session.h"

namespace remat {
namespace {

constexpr const char* kConfigFile = "adapter_config.json";
constexpr const char* kWeightsFile = "adapter_model.safetensors";

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string fmt_shape(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

// PEFT options remat does not implement: (key, why) when the file sets them to anything but
// their neutral value.
void refuse_unsupported(const JsonValue& doc, const std::string& origin) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(origin + ": " + what +
                                " is not supported; remat trains plain LoRA");
  };
  auto truthy = [&](const char* key) {
    const JsonValue* v = doc.find(key);
    return v && v->type == JsonValue::Type::boolean && v->boolean;
  };
  auto non_empty = [&](const char* key) {
    const JsonValue* v = doc.find(key);
    return v && v->type != JsonValue::Type::null &&
           !((v->type == JsonValue::Type::object && v->object.empty()) ||
             (v->type == JsonValue::Type::array && v->array.empty()));
  };
  if (truthy("use_dora")) fail("use_dora (DoRA)");
  if (truthy("use_rslora")) fail("use_rslora (rank-stabilised scaling alpha/sqrt(r))");
  if (const JsonValue* b = doc.find("bias");
      b && !(b->type == JsonValue::Type::string && b->string == "none"))
    fail("bias '" + (b->type == JsonValue::Type::string ? b->string : std::string("?")) +
         "' (trained biases)");
  if (const JsonValue* d = doc.find("lora_dropout");
      d && !(d->type == JsonValue::Type::number && d->number == 0))
    fail("lora_dropout other than 0");
  for (const char* key : {"rank_pattern", "alpha_pattern", "modules_to_save", "layers_to_transform",
                          "layers_pattern", "target_parameters"})
    if (non_empty(key)) fail(std::string(key));
}

int required_int(const JsonValue& doc, const char* key, const std::string& origin) {
  const JsonValue* v = doc.find(key);
  if (!v || v->type != JsonValue::Type::number || v->number < 1 ||
      v->number != std::floor(v->number) || v->number > 1e6)
    throw std::invalid_argument(origin + ": '" + key + "' must be a positive whole number");
  return static_cast<int>(v->number);
}

std::string targets_text(std::vector<std::string> t) {
  std::string s;
  for (const auto& x : std::set<std::string>(t.begin(), t.end())) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path.string() + ": cannot read it");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void lora_initial_values(const TensorSpec& p, uint64_t seed, std::size_t adapter_index,
                         uint64_t first, std::span<float> out) {
  if (p.name.ends_with(".lora_B.weight")) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  if (!p.name.ends_with(".lora_A.weight") || p.shape.size() != 2)
    throw std::logic_error("lora_initial_values: '" + p.name + "' is no LoRA A or B");
  // kaiming_uniform_(a=sqrt(5)) on [R, in]: gain sqrt(2/(1+5)), bound gain*sqrt(3/in) = 1/sqrt(in).
  const double bound = 1.0 / std::sqrt(static_cast<double>(p.shape[1]));
  // Element i is draw i of its own splitmix64 stream: any piece can start anywhere.
  const uint64_t start = seed * 0x8CB92BA72F3D8DD7ull + (adapter_index + 1) * 0xA0761D6478BD642Full;
  for (std::size_t i = 0; i < out.size(); ++i) {
    uint64_t state = start + (first + i) * 0x9E3779B97F4A7C15ull;
    const double u = double(splitmix(state) >> 11) * (1.0 / 9007199254740992.0);
    out[i] = static_cast<float>((2 * u - 1) * bound);
  }
}

std::string peft_key(const std::string& parameter, Architecture arch) {
  return std::string("base_model.model.") + (arch == Architecture::gpt2 ? "transformer." : "") +
         parameter;
}

AdapterConfig parse_adapter_config(std::string_view json, const std::string& origin) {
  JsonValue doc;
  try {
    doc = parse_json(json);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(origin + ": " + e.what());
  }
  if (doc.type != JsonValue::Type::object)
    throw std::invalid_argument(origin + ": not a JSON object");
  const JsonValue* type = doc.find("peft_type");
  if (!type || type->type != JsonValue::Type::string || type->string != "LORA")
    throw std::invalid_argument(origin + ": peft_type must be \"LORA\"");
  refuse_unsupported(doc, origin);
  AdapterConfig c;
  c.rank = required_int(doc, "r", origin);
  const JsonValue* alpha = doc.find("lora_alpha");
  if (!alpha || alpha->type != JsonValue::Type::number || alpha->number <= 0)
    throw std::invalid_argument(origin + ": 'lora_alpha' must be a positive number");
  c.alpha = alpha->number;
  const JsonValue* t = doc.find("target_modules");
  if (t && t->type == JsonValue::Type::string)
    throw std::invalid_argument(origin + ": target_modules as a regular expression ('" + t->string +
                                "') is not supported; list the module names");
  if (!t || t->type != JsonValue::Type::array || t->array.empty())
    throw std::invalid_argument(origin + ": 'target_modules' must be a list of module names");
  for (const JsonValue& v : t->array) {
    if (v.type != JsonValue::Type::string)
      throw std::invalid_argument(origin + ": 'target_modules' must hold strings");
    c.targets.push_back(v.string);
  }
  const JsonValue* f = doc.find("fan_in_fan_out");
  c.fan_in_fan_out = f && f->type == JsonValue::Type::boolean && f->boolean;
  if (const JsonValue* b = doc.find("base_model_name_or_path");
      b && b->type == JsonValue::Type::string)
    c.base_model = b->string;
  return c;
}

AdapterConfig read_adapter_config(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kConfigFile;
  return parse_adapter_config(read_text(path), path.string());
}

LoraSpec lora_spec_for(const AdapterConfig& file, const LoraSpec& given, Architecture arch,
                       const std::string& origin) {
  LoraSpec s;
  s.rank = file.rank;
  s.alpha = file.alpha;
  s.targets = file.targets;
  if (!given.enabled()) return s;
  if (given.rank != file.rank)
    throw std::invalid_argument(origin + ": the adapter has r " + std::to_string(file.rank) +
                                ", not the requested rank " + std::to_string(given.rank));
  if (given.effective_alpha() != file.alpha)
    throw std::invalid_argument(origin + ": the adapter has lora_alpha " +
                                JsonWriter().value(file.alpha).str() + ", not the requested " +
                                JsonWriter().value(given.effective_alpha()).str());
  const std::vector<std::string> wanted = lora_targets(given, arch);
  if (targets_text(wanted) != targets_text(file.targets))
    throw std::invalid_argument(origin + ": the adapter targets " + targets_text(file.targets) +
                                ", not the requested " + targets_text(wanted));
  return s;
}

std::string adapter_config_json(const LoraSpec& spec, bool fan_in_fan_out,
                                const std::string& base_model) {
  JsonWriter j(2);
  j.begin_object().field("peft_type", "LORA").field("task_type", "CAUSAL_LM");
  if (base_model.empty())
    j.key("base_model_name_or_path").null();
  else
    j.field("base_model_name_or_path", base_model);
  j.field("r", spec.rank).field("lora_alpha", spec.effective_alpha());
  j.key("target_modules").begin_array();
  for (const std::string& t : spec.targets) j.value(t);
  j.end_array();
  j.field("lora_dropout", 0.0).field("bias", "none").field("fan_in_fan_out", fan_in_fan_out);
  j.field("use_rslora", false).field("use_dora", false).field("init_lora_weights", true);
  j.field("inference_mode", true).key("modules_to_save").null();
  j.end_object();
  return j.str() + "\n";
}

void save_adapter(const Session& session, const std::filesystem::path& dir,
                  const std::string& base_model) {
  const Plan& plan = session.plan();
  if (plan.adapters.empty())
    throw std::invalid_argument("the session trains no LoRA adapters; nothing to save");
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument(dir.string() + ": cannot create the adapter folder" +
                                (ec ? ": " + ec.message() : std::string()));
  const Architecture arch = session.config().model.arch;
  std::vector<TensorSpec> specs;
  for (TensorId id : plan.parameters) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    specs.push_back({peft_key(t.name, arch), t.shape});
  }
  SafetensorsWriter writer(dir / kWeightsFile, specs, {{"format", "pt"}});
  for (TensorId id : plan.parameters) writer.write(session.values(id));
  writer.commit();
  LoraSpec spec = session.config().lora;
  spec.targets = lora_targets(spec, arch);
  write_file_atomically(
      dir / kConfigFile,
      adapter_config_json(spec, plan.adapters.front().fan_in_fan_out, base_model));
}

void load_adapter(Session& session, const std::filesystem::path& dir) {
  const Plan& plan = session.plan();
  if (plan.adapters.empty())
    throw std::invalid_argument("the session trains no LoRA adapters; nothing to load into");
  const std::string origin = dir.string();
  const AdapterConfig config = read_adapter_config(dir);
  const Architecture arch = session.config().model.arch;
  lora_spec_for(config, session.config().lora, arch, origin);
  if (config.fan_in_fan_out != plan.adapters.front().fan_in_fan_out)
    throw std::invalid_argument(origin + ": fan_in_fan_out must be " +
                                (plan.adapters.front().fan_in_fan_out ? "true" : "false") +
                                " for this model's weights");
  const SafetensorsSource source = SafetensorsSource::open(dir / kWeightsFile);
  std::map<std::string, const SafetensorsEntry*> by_key;
  for (const SafetensorsEntry& e : source.header().tensors) by_key[e.name] = &e;
  std::vector<std::vector<float>> values;
  for (TensorId id : plan.parameters) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    const std::string key = peft_key(t.name, arch);
    const auto it = by_key.find(key);
    if (it == by_key.end())
      throw std::invalid_argument(source.origin() + ": no tensor '" + key + "'");
    if (it->second->shape != t.shape)
      throw std::invalid_argument(source.origin() + ": tensor '" + key + "' has shape " +
                                  fmt_shape(it->second->shape) + "; the adapter needs " +
                                  fmt_shape(t.shape));
    values.emplace_back(static_cast<std::size_t>(t.elements()));
    source.read(*it->second, 0, values.back());
    by_key.erase(it);
  }
  if (!by_key.empty())
    throw std::invalid_argument(source.origin() + ": tensor '" + by_key.begin()->first +
                                "' belongs to no adapter of this model");
  session.set_trained_parameters(values);
}

void save_merged(const Session& session, const std::filesystem::path& path) {
  const Plan& plan = session.plan();
  std::map<TensorId, const LoraAdapter*> adapter_of;
  for (const LoraAdapter& a : plan.adapters) adapter_of[a.base] = &a;
  const std::vector<TensorId>& weights = plan.adapters.empty() ? plan.parameters : plan.frozen;
  std::vector<TensorSpec> specs;
  for (TensorId id : weights) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    specs.push_back({t.name, t.shape});
  }
  SafetensorsWriter writer(path, specs, gpt2_metadata(session.config().model));
  for (TensorId id : weights) {
    std::vector<float> w = session.values(id);
    if (const auto it = adapter_of.find(id); it != adapter_of.end()) {
      const LoraAdapter& a = *it->second;
      const std::vector<float> A = session.values(a.a), B = session.values(a.b);
      const Tensor& at = plan.tensors.at(static_cast<std::size_t>(a.a)).tensor;
      const Tensor& bt = plan.tensors.at(static_cast<std::size_t>(a.b)).tensor;
      const int64_t rank = at.shape[0], in = at.shape[1], out = bt.shape[0];
      // delta[o][i] = scale · Σ_r B[o][r]·A[r][i], summed in double, added once to W.
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double d = 0;
          for (int64_t r = 0; r < rank; ++r)
            d += double(B[size_t(o * rank + r)]) * double(A[size_t(r * in + i)]);
          float& x = a.fan_in_fan_out ? w[size_t(i * out + o)] : w[size_t(o * in + i)];
          x = static_cast<float>(double(x) + double(a.scale) * d);
        }
    }
    writer.write(w);
  }
  writer.commit();
}

}  // namespace remat
