#include "graph/model_config.h"

#include <stdexcept>
#include <string>

namespace remat {

ModelConfig ModelConfig::preset(std::string_view name) {
  // Published GPT-2 shapes (Radford et al. 2019; Hugging Face configs).
  if (name == "tiny") return {4, 128, 4, 256, 64};
  if (name == "gpt2") return {12, 768, 12, 50257, 1024};
  if (name == "gpt2-medium") return {24, 1024, 16, 50257, 1024};
  if (name == "gpt2-large") return {36, 1280, 20, 50257, 1024};
  if (name == "gpt2-xl") return {48, 1600, 25, 50257, 1024};
  throw std::invalid_argument("unknown model '" + std::string(name) +
                              "'; use tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl");
}

std::string_view ModelConfig::name() const {
  for (std::string_view preset : {"tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"})
    if (ModelConfig::preset(preset) == *this) return preset;
  return "custom";
}

void ModelConfig::validate() const {
  auto positive = [](int v, const char* what) {
    if (v <= 0)
      throw std::invalid_argument(std::string(what) + " must be positive, got " +
                                  std::to_string(v));
  };
  positive(layers, "layers");
  positive(dim, "dim");
  positive(heads, "heads");
  positive(vocab, "vocab");
  positive(ctx, "ctx");
  if (dim % heads != 0)
    throw std::invalid_argument("heads (" + std::to_string(heads) + ") must divide dim (" +
                                std::to_string(dim) + ")");
}

uint64_t ModelConfig::parameter_count() const {
  const uint64_t c = static_cast<uint64_t>(dim);
  const uint64_t per_block =
      2 * c + (c * 3 * c + 3 * c) + (c * c + c) + 2 * c + (c * 4 * c + 4 * c) + (4 * c * c + c);
  return static_cast<uint64_t>(vocab) * c + static_cast<uint64_t>(ctx) * c +
         static_cast<uint64_t>(layers) * per_block + 2 * c;
}

void TrainShape::validate(const ModelConfig& model) const {
  if (batch <= 0)
    throw std::invalid_argument("batch must be positive, got " + std::to_string(batch));
  if (seq <= 0) throw std::invalid_argument("seq must be positive, got " + std::to_string(seq));
  if (seq > model.ctx)
    throw std::invalid_argument("seq (" + std::to_string(seq) + ") must be at most ctx (" +
                                std::to_string(model.ctx) + ")");
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw std::invalid_argument("dropout must be in [0, 1), got " + std::to_string(dropout));
}

}  // namespace remat
