#include "formats/llama_weights.h"

#include <algorithm>

#include "formats/model_weights.h"

namespace remat {

void llama_initial_values(const TensorSpec& p, uint64_t seed, std::size_t parameter_index,
                          uint64_t first, std::span<float> out, bool norm_offset) {
  if (p.name.ends_with(".bias")) {
    std::fill(out.begin(), out.end(), 0.0f);
  } else if (p.name.ends_with("layernorm.weight") || p.name.ends_with("_norm.weight") ||
             p.name == "model.norm.weight") {
    std::fill(out.begin(), out.end(), norm_offset ? 0.0f : 1.0f);
  } else {
    seeded_normal_values(seed, parameter_index, 0.02, first, out);
  }
}

bool llama_ignored_tensor(const std::string& name, const ModelConfig& model) {
  return name.ends_with(".rotary_emb.inv_freq") || (model.tied_head && name == "lm_head.weight");
}

}  // namespace remat
