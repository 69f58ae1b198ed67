#include "graph/weight_dtype.h"

#include <stdexcept>
#include <string>

namespace remat {

DType parse_weight_dtype(std::string_view text) {
  try {
    return parse_activation_dtype(text);  // the same three names
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("unknown weights dtype '" + std::string(text) +
                                "'; use f32, f16 or bf16");
  }
}

void check_weight_dtype(DType t, bool has_frozen) {
  if (t == DType::f32) return;
  if (t == DType::u32)
    throw std::invalid_argument("weights are stored as f32, f16 or bf16, not u32");
  if (!has_frozen)
    throw std::invalid_argument("--weights-dtype " + std::string(dtype_name(t)) +
                                " applies to frozen weights: use it with --lora");
}

void store_frozen_weights(Graph& g, DType t) {
  check_weight_dtype(t, !g.frozen.empty());
  if (t == DType::f32) return;
  for (TensorId id : g.frozen) {
    Tensor& w = g.tensors.at(static_cast<std::size_t>(id));
    if (w.shape.size() >= 2) w.dtype = t;
  }
}

}  // namespace remat
