#include "graph/model_builder.h"

#include <stdexcept>

#include "graph/autodiff.h"
#include "graph/gpt_builder.h"
#include "graph/llama_builder.h"
#include "graph/qwen35_builder.h"
#include "graph/residual_fusion.h"
#include "graph/weight_dtype.h"

namespace remat {

Graph build_model(const ModelConfig& config, const TrainShape& shape) {
  if (config.qwen35) return build_qwen35(config, shape);
  switch (config.arch) {
    case Architecture::gpt2:
      return build_gpt(config, shape);
    case Architecture::llama:
      return build_llama(config, shape);
  }
  throw std::invalid_argument("unknown model architecture");
}

Graph build_training_model(const ModelConfig& config, const TrainShape& shape,
                           const LoraSpec& lora) {
  Graph g = build_model(config, shape);
  if (lora.enabled()) {
    LoraSpec resolved = lora;
    resolved.targets = lora_targets(lora, config);
    apply_lora(g, resolved);
  }
  store_frozen_weights(g, shape.weight_dtype);
  store_block_weights(g, shape.block_weights, shape.activation_dtype);
  if (shape.fuse_residuals) fuse_residuals(g);
  autodiff(g);
  return g;
}

}  // namespace remat
