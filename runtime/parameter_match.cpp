#include "runtime/parameter_match.h"

#include <map>
#include <set>
#include <stdexcept>

namespace remat {

namespace {

std::string gpt2_name(const std::string& file_name) {
  const std::string prefix = "transformer.";
  const std::string name =
      file_name.starts_with(prefix) ? file_name.substr(prefix.size()) : file_name;
  // "h.3.attn.bias" is a mask buffer, "h.3.attn.c_attn.bias" a parameter: match whole components.
  if (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
      name == "lm_head.weight")
    return "";
  return name;
}

std::string llama_name(const std::string& file_name, const ModelConfig& model) {
  if (file_name.ends_with(".rotary_emb.inv_freq")) return "";
  if (file_name == "lm_head.weight" && model.tied_head) return "";
  return file_name;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

// File is SafetensorsHeader or SafetensorsContents: both list tensors with .name and .shape.
template <class File, class Tensor = std::remove_cvref_t<decltype(File{}.tensors[0])>>
std::vector<const Tensor*> match(const File& file, const std::vector<ParameterSpec>& params,
                                 const ModelConfig& model) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& t : file.tensors) {
    const std::string name = parameter_name(t.name, model);
    if (name.empty()) continue;
    if (auto [it, fresh] = by_name.emplace(name, &t); !fresh)
      throw std::invalid_argument("tensors '" + it->second->name + "' and '" + t.name +
                                  "' both hold '" + name + "'");
  }
  std::vector<const Tensor*> out;
  std::set<std::string> used;
  for (const auto& p : params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw std::invalid_argument("the checkpoint has no tensor '" + p.name + "'");
    if (it->second->shape != p.shape)
      throw std::invalid_argument("tensor '" + p.name + "' has shape " +
                                  shape_text(it->second->shape) + "; the model needs " +
                                  shape_text(p.shape));
    out.push_back(it->second);
    used.insert(p.name);
  }
  for (const auto& [name, t] : by_name)
    if (!used.count(name))
      throw std::invalid_argument("the checkpoint has tensor '" + name +
                                  "', which this model does not use");
  return out;
}

}  // namespace

std::string parameter_name(const std::string& file_name, const ModelConfig& model) {
  return model.arch == Architecture::gpt2 ? gpt2_name(file_name) : llama_name(file_name, model);
}

std::vector<const SafetensorsEntry*> match_parameters(const SafetensorsHeader& file,
                                                      const std::vector<ParameterSpec>& params,
                                                      const ModelConfig& model) {
  return match(file, params, model);
}

std::vector<const NamedTensor*> match_parameters(const SafetensorsContents& file,
                                                 const std::vector<ParameterSpec>& params,
                                                 const ModelConfig& model) {
  return match(file, params, model);
}

}  // namespace remat
