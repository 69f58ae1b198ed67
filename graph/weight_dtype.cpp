#include "graph/weight_dtype.h"

#include <stdexcept>
#include <string>

#include "graph/op_schema.h"

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

namespace remat {

namespace {

// Whether a kernel that decodes blocks reads operand `slot` of `op`: a matmul's weight [out, in]
// (rows of the reduction, as a GGUF file stores them), the token embedding's table (scaled or
// not), GPT-2's embedding table when its position table is f32 (the gather adds f32 rows), the
// chunked head's weight [V, C]. Their backward ops read the weight the same ways.
bool reads_blocks(const Graph& g, const Op& op, std::size_t slot) {
  switch (op.kind) {
    case OpKind::matmul:
      return slot == slot::matmul::weight && op.attrs.w_layout == WeightLayout::out_in;
    case OpKind::token_embedding:
      return slot == slot::token_embedding::wte;
    case OpKind::embedding:
      return slot == slot::embedding::wte &&
             g.tensor(op.inputs[slot::embedding::wpe]).dtype == DType::f32;
    case OpKind::head_loss:
      return slot == slot::head_loss::weight;
    default:
      return false;
  }
}

// Whether every op of `g` that reads `id` reads it through a block-decoding kernel.
bool only_block_readers(const Graph& g, TensorId id) {
  bool read = false;
  for (const Op& op : g.ops)
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] != id) continue;
      if (!reads_blocks(g, op, i)) return false;
      read = true;
    }
  return read;
}

}  // namespace

std::vector<std::string> store_block_weights(Graph& g, const std::vector<BlockWeight>& blocks,
                                             DType activation_dtype) {
  if (blocks.empty()) return {};
  if (activation_dtype != DType::f32)
    throw std::invalid_argument(
        "a base kept in quantized blocks needs f32 activations (--act-dtype " +
        std::string(dtype_name(activation_dtype)) + " is not supported there)");
  std::vector<std::string> decoded;
  for (const BlockWeight& b : blocks) {
    TensorId id = kNoTensor;
    for (TensorId f : g.frozen)
      if (g.tensor(f).name == b.name) id = f;
    if (id == kNoTensor)
      throw std::invalid_argument("'" + b.name + "' is not a frozen weight of this model");
    Tensor& w = g.tensors.at(static_cast<std::size_t>(id));
    if (w.shape.size() != 2 || b.format.block_values == 0 ||
        w.shape.back() % b.format.block_values != 0)
      throw std::invalid_argument("'" + b.name + "' " + shape_text(w.shape) +
                                  " is not rows of whole " + b.format.name + " blocks");
    if (!only_block_readers(g, id)) {
      decoded.push_back(b.name);
      continue;
    }
    w.dtype = DType::blocks;
    w.blocks = b.format;
  }
  return decoded;
}

bool conv1d_held_out_in(const TrainShape& shape, std::string_view weight) {
  const bool conv1d = weight.ends_with("attn.c_attn.weight") ||
                      weight.ends_with("attn.c_proj.weight") ||
                      weight.ends_with("mlp.c_fc.weight") || weight.ends_with("mlp.c_proj.weight");
  if (!conv1d) return false;
  for (const BlockWeight& b : shape.block_weights)
    if (b.name == weight) return true;
  return false;
}

}  // namespace remat
