#include "formats/model_metadata.h"

#include <stdexcept>

#include "formats/gpt2_weights.h"
#include "formats/hf_config.h"

namespace remat {

std::map<std::string, std::string> model_metadata(const ModelConfig& model) {
  if (model.arch == Architecture::gpt2) return gpt2_metadata(model);
  return {{"format", "pt"}, {kConfigMetadataKey, hf_config_json(model)}};
}

std::optional<ModelConfig> metadata_model(const std::map<std::string, std::string>& metadata) {
  const auto it = metadata.find(kConfigMetadataKey);
  if (it == metadata.end()) return std::nullopt;
  try {
    return model_config_from_hf_json(it->second);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("__metadata__ ") + kConfigMetadataKey + ": " +
                                e.what());
  }
}

ModelConfig safetensors_model(const SafetensorsHeader& file, std::optional<int> heads) {
  if (auto m = metadata_model(file.metadata)) return *m;
  return infer_gpt2_config(file, heads);
}

ModelConfig safetensors_model(const SafetensorsContents& file, std::optional<int> heads) {
  if (auto m = metadata_model(file.metadata)) return *m;
  return infer_gpt2_config(file, heads);
}

}  // namespace remat
