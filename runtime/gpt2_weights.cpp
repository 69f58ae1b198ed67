#include "runtime/gpt2_weights.h"

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <type_traits>

namespace remat {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

constexpr uint64_t kSplitmixIncrement = 0x9E3779B97F4A7C15ull;

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += kSplitmixIncrement);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double uniform01(uint64_t& s) {
  return (double(splitmix(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

std::string strip_prefix(const std::string& name) {
  const std::string prefix = "transformer.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

// The causal-mask buffers GPT-2 checkpoints carry: "h.3.attn.bias", "h.3.attn.masked_bias".
// ("h.3.attn.c_attn.bias" is a parameter: match the whole last two components.)
bool ignored_buffer(const std::string& name) {
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
         name == "lm_head.weight";
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
  // One independent stream per parameter, so adding a layer does not shift the others' values.
  // Elements 2k and 2k+1 are one Box-Muller pair from draws 2k and 2k+1 of splitmix64, whose
  // state after d draws is start + d·increment: any piece can start anywhere.
  const uint64_t start =
      seed * 0x632BE59BD9B4E019ull + (parameter_index + 1) * 0xD1B54A32D192ED03ull;
  const uint64_t end = first + out.size();
  for (uint64_t pair = first / 2; 2 * pair < end; ++pair) {
    uint64_t state = start + 2 * pair * kSplitmixIncrement;
    const double r = std::sqrt(-2.0 * std::log(uniform01(state)));
    const double t = 2.0 * M_PI * uniform01(state);
    if (2 * pair >= first) out[2 * pair - first] = static_cast<float>(stddev * r * std::cos(t));
    if (2 * pair + 1 >= first && 2 * pair + 1 < end)
      out[2 * pair + 1 - first] = static_cast<float>(stddev * r * std::sin(t));
  }
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

template <class File, class Tensor = std::remove_cvref_t<decltype(File{}.tensors[0])>>
std::vector<const Tensor*> match_parameters(const File& file,
                                            const std::vector<ParameterSpec>& params) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& t : file.tensors) {
    const std::string name = strip_prefix(t.name);
    if (ignored_buffer(name)) continue;
    if (!by_name.emplace(name, &t).second)
      throw std::invalid_argument("tensor '" + name +
                                  "' appears twice (with and without 'transformer.')");
  }
  std::vector<const Tensor*> out;
  std::set<std::string> used;
  for (const auto& p : params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw std::invalid_argument("the checkpoint has no tensor '" + p.name + "'");
    if (it->second->shape != p.shape) {
      auto fmt = [](const std::vector<int64_t>& s) {
        std::string o = "[";
        for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
        return o + "]";
      };
      throw std::invalid_argument("tensor '" + p.name + "' has shape " + fmt(it->second->shape) +
                                  "; the model needs " + fmt(p.shape));
    }
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

std::vector<const SafetensorsEntry*> match_gpt2_parameters(
    const SafetensorsHeader& file, const std::vector<ParameterSpec>& params) {
  return match_parameters(file, params);
}

std::vector<const NamedTensor*> match_gpt2_parameters(const SafetensorsContents& file,
                                                      const std::vector<ParameterSpec>& params) {
  return match_parameters(file, params);
}

}  // namespace remat
