// The graph of any supported model: dispatches on ModelConfig::arch to the family's builder.
#pragma once

#include "graph/graph.h"
#include "graph/lora.h"
#include "graph/model_config.h"

namespace remat {

// Forward graph (build_gpt, build_llama or build_qwen35); std::invalid_argument for a bad config or
// shape.
Graph build_model(const ModelConfig& config, const TrainShape& shape);
// build_model (+ apply_lora with the spec's targets, else the family's defaults, when
// lora.enabled()) + store_frozen_weights (shape.weight_dtype, graph/weight_dtype.h) + autodiff:
// the training graph the planner takes.
Graph build_training_model(const ModelConfig& config, const TrainShape& shape,
                           const LoraSpec& lora = {});

}  // namespace remat
