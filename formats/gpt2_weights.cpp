#include "formats/gpt2_weights.h"

#include <cmath>
#include <regex>
#include <stdexcept>
#include <type_traits>

#include "formats/model_weights.h"

namespace remat {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip_prefix(const std::string& name) {
  const std::string prefix = "transformer.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

}  // namespace

std::vector<float> gpt2_initial_values(const ParameterSpec& p, const ModelConfig& model,
                                       uint64_t seed, std::size_t parameter_index) {
  std::size_t n = 1;
  for (int64_t d : p.shape) n *= static_cast<std::size_t>(d);
  std::vector<float> v(n);
  gpt2_initial_values(p, model, seed, parameter_index, 0, v);
  return v;
}

void gpt2_initial_values(const ParameterSpec& p, const ModelConfig& model, uint64_t seed,
                         std::size_t parameter_index, uint64_t first, std::span<float> out) {
  if (ends_with(p.name, ".bias")) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  if (ends_with(p.name, "ln_1.weight") || ends_with(p.name, "ln_2.weight") ||
      p.name == "ln_f.weight") {
    std::fill(out.begin(), out.end(), 1.0f);
    return;
  }
  double stddev = 0.02;
  if (ends_with(p.name, "attn.c_proj.weight") || ends_with(p.name, "mlp.c_proj.weight"))
    stddev = 0.02 / std::sqrt(2.0 * model.layers);
  seeded_normal_values(seed, parameter_index, stddev, first, out);
}

namespace {

// File is SafetensorsHeader or SafetensorsContents: both list tensors with .name and .shape.
template <class File, class Tensor = std::remove_cvref_t<decltype(File{}.tensors[0])>>
ModelConfig infer_config(const File& file, std::optional<int> heads) {
  const Tensor* wte = nullptr;
  const Tensor* wpe = nullptr;
  int layers = 0;
  const std::regex block(R"(h\.(\d+)\..*)");
  for (const auto& t : file.tensors) {
    const std::string name = strip_prefix(t.name);
    if (name == "wte.weight") wte = &t;
    if (name == "wpe.weight") wpe = &t;
    std::smatch m;
    if (std::regex_match(name, m, block)) layers = std::max(layers, std::stoi(m[1].str()) + 1);
  }
  const bool llama = std::any_of(file.tensors.begin(), file.tensors.end(), [](const auto& t) {
    return t.name == "model.embed_tokens.weight";
  });
  if (!wte && llama)
    throw std::invalid_argument(
        "a Llama-family checkpoint (model.embed_tokens.weight): its shape cannot be read from "
        "the weights alone; name the model (e.g. --model llama-tiny with overrides)");
  if (!wte || wte->shape.size() != 2)
    throw std::invalid_argument("not a GPT-2 checkpoint: no 2-D wte.weight tensor");
  if (!wpe || wpe->shape.size() != 2 || wpe->shape[1] != wte->shape[1])
    throw std::invalid_argument("not a GPT-2 checkpoint: no wpe.weight of shape [ctx, " +
                                std::to_string(wte->shape[1]) + "]");
  ModelConfig c;
  c.vocab = static_cast<int>(wte->shape[0]);
  c.dim = static_cast<int>(wte->shape[1]);
  c.ctx = static_cast<int>(wpe->shape[0]);
  c.layers = layers;
  if (heads) {
    c.heads = *heads;
  } else if (auto it = file.metadata.find("n_head"); it != file.metadata.end()) {
    try {
      c.heads = std::stoi(it->second);
    } catch (const std::exception&) {
      throw std::invalid_argument("__metadata__ n_head is '" + it->second + "', not a number");
    }
  } else {
    throw std::invalid_argument(
        "the checkpoint does not say its head count (__metadata__ n_head); pass --heads");
  }
  c.validate();
  return c;
}

}  // namespace

std::map<std::string, std::string> gpt2_metadata(const ModelConfig& m) {
  return {{"format", "pt"},
          {"n_head", std::to_string(m.heads)},
          {"n_layer", std::to_string(m.layers)},
          {"n_embd", std::to_string(m.dim)},
          {"n_ctx", std::to_string(m.ctx)},
          {"vocab_size", std::to_string(m.vocab)}};
}

ModelConfig infer_gpt2_config(const SafetensorsHeader& file, std::optional<int> heads) {
  return infer_config(file, heads);
}

ModelConfig infer_gpt2_config(const SafetensorsContents& file, std::optional<int> heads) {
  return infer_config(file, heads);
}

bool gpt2_ignored_tensor(const std::string& name) {
  // "h.3.attn.c_attn.bias" is a parameter: match the whole last two components.
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
         name == "lm_head.weight";
}

std::vector<const SafetensorsEntry*> match_gpt2_parameters(
    const SafetensorsHeader& file, const std::vector<ParameterSpec>& params) {
  return match_model_parameters(file, params, ModelConfig{});
}

std::vector<const NamedTensor*> match_gpt2_parameters(const SafetensorsContents& file,
                                                      const std::vector<ParameterSpec>& params) {
  return match_model_parameters(file, params, ModelConfig{});
}

}  // namespace remat
