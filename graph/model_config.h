// The GPT-2 family's shape and one training step's shape, with the validation a user gets back as
// a one-line std::invalid_argument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/tensor.h"

namespace remat {

struct ModelConfig {
  int layers = 4;   // transformer blocks L
  int dim = 128;    // channels C (the textbook's H)
  int heads = 4;    // attention heads NH; must divide dim
  int vocab = 256;  // vocabulary V
  int ctx = 64;     // maximum sequence length (rows of wpe)

  // "tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"; unknown names are invalid_argument.
  static ModelConfig preset(std::string_view name);
  // Throws invalid_argument naming the bad field and what would be right.
  void validate() const;
  uint64_t parameter_count() const;
  // The preset this shape equals, or "custom".
  std::string_view name() const;
  bool operator==(const ModelConfig&) const = default;
};

struct TrainShape {
  int batch = 4;                        // B
  int seq = 64;                         // T, at most ctx
  float dropout = 0.0f;                 // GPT-2 dropout probability; 0 omits the dropout ops
  DType activation_dtype = DType::f32;  // element type of activations and their gradients

  // Throws invalid_argument (positive sizes, seq <= ctx, 0 <= dropout < 1).
  void validate(const ModelConfig& model) const;
};

}  // namespace remat
