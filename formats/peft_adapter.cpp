#include "formats/peft_adapter.h"

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "base/json.h"
#include "base/json_writer.h"
#include "base/whole_file.h"
#include "formats/gguf_qwen35.h"

namespace remat {
namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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

std::optional<std::string> peft_text_model_key(std::string_view key) {
  constexpr std::string_view kPrefix = "base_model.model.";
  if (!key.starts_with(kPrefix)) return std::string(key);
  const std::optional<std::string> text = qwen35_text_tensor_name(key.substr(kPrefix.size()));
  if (!text) return std::nullopt;
  return std::string(kPrefix) + *text;
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
  const std::filesystem::path path = dir / kPeftConfigFile;
  return parse_adapter_config(read_whole_file(path), path.string());
}

LoraSpec lora_spec_for(const AdapterConfig& file, const LoraSpec& given, const ModelConfig& model,
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
  const std::vector<std::string> wanted = lora_targets(given, model);
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

}  // namespace remat
