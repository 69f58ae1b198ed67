#include "formats/model_weights.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "formats/gguf_qwen35.h"
#include "formats/gpt2_weights.h"
#include "formats/llama_weights.h"

namespace remat {
namespace {

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

// The parameter name a checkpoint tensor stands for, or nothing when the family skips it.
std::optional<std::string> parameter_name(const std::string& name, const ModelConfig& model) {
  if (model.qwen35) {
    // The multimodal form's text model under its text names; vision tower and MTP skipped.
    const std::optional<std::string> text = qwen35_text_tensor_name(name);
    if (!text || llama_ignored_tensor(*text, model)) return std::nullopt;
    return text;
  }
  if (model.arch == Architecture::llama) {
    if (llama_ignored_tensor(name, model)) return std::nullopt;
    return name;
  }
  const std::string prefix = "transformer.";
  const std::string bare = name.starts_with(prefix) ? name.substr(prefix.size()) : name;
  if (gpt2_ignored_tensor(bare)) return std::nullopt;
  return bare;
}

// Whether a file's tensor of `shape` holds parameter p's values in its order: its shape, or for a
// Qwen3.5 conv1d weight transformers' [channels, 1, kernel] of the graph's [channels, kernel].
bool same_layout(const std::vector<int64_t>& shape, const TensorSpec& p, const ModelConfig& model) {
  if (shape == p.shape) return true;
  return model.qwen35 && p.name.ends_with(".conv1d.weight") && p.shape.size() == 2 &&
         shape == qwen35_conv1d_file_shape(p.shape);
}

// File is SafetensorsHeader or SafetensorsContents: both list tensors with .name and .shape.
template <class Tensor, class File>
std::vector<const Tensor*> match(const File& file, const std::vector<TensorSpec>& params,
                                 const ModelConfig& model) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& t : file.tensors) {
    const auto name = parameter_name(t.name, model);
    if (!name) continue;
    if (!by_name.emplace(*name, &t).second)
      throw std::invalid_argument("tensor '" + *name + "' appears twice (" +
                                  (model.qwen35 ? "with and without 'model.language_model.'"
                                                : "with and without 'transformer.'") +
                                  ")");
  }
  std::vector<const Tensor*> out;
  std::set<std::string> used;
  for (const auto& p : params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw std::invalid_argument("the checkpoint has no tensor '" + p.name + "'");
    if (!same_layout(it->second->shape, p, model))
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

void seeded_normal_values(uint64_t seed, std::size_t parameter_index, double stddev, uint64_t first,
                          std::span<float> out) {
  // Elements 2k and 2k+1 are one Box-Muller pair from draws 2k and 2k+1 of splitmix64, whose
  // state after d draws is start + d·increment.
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

void initial_values(const TensorSpec& p, const ModelConfig& model, uint64_t seed,
                    std::size_t parameter_index, uint64_t first, std::span<float> out) {
  if (model.arch == Architecture::llama)
    llama_initial_values(p, seed, parameter_index, first, out, model.gemma3);
  else
    gpt2_initial_values(p, model, seed, parameter_index, first, out);
}

std::vector<const SafetensorsEntry*> match_model_parameters(const SafetensorsHeader& file,
                                                            const std::vector<TensorSpec>& params,
                                                            const ModelConfig& model) {
  return match<SafetensorsEntry>(file, params, model);
}

std::vector<const NamedTensor*> match_model_parameters(const SafetensorsContents& file,
                                                       const std::vector<TensorSpec>& params,
                                                       const ModelConfig& model) {
  return match<NamedTensor>(file, params, model);
}

}  // namespace remat
