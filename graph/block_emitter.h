// Emits one block of the chain: its parameters, activations and forward ops, operands placed by
// their schema names. Both model builders (GPT-2, Llama) and the random test chains use it, so
// every graph names, places and costs its tensors the same way.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"

namespace remat {

// Appends a chain block named `name` whose input is `input` (kNoTensor for the first block);
// returns its index.
int new_block(Graph& g, std::string name, TensorId input);

// A graph with the step's inputs (tokens, targets [B,T] u32) and its loss tensor, before any block.
Graph start_chain(const TrainShape& shape);
// Assigns the loss to the last block (the head), once every block is emitted.
void finish_chain(Graph& g);

class BlockEmitter {
 public:
  // `dropout_counter` numbers the dropout ops of the whole graph (their RNG stream ids); it may
  // be null when the shape has no dropout.
  BlockEmitter(Graph& g, const TrainShape& shape, int block, uint32_t* dropout_counter)
      : g_(g), shape_(shape), block_(block), dropout_counter_(dropout_counter) {}

  // An arena activation of this block (fp32 for statistics, else the shape's activation type).
  TensorId activation(const std::string& name, std::vector<int64_t> dims, bool fp32 = false);
  int block() const { return block_; }
  // A persistent fp32 parameter, appended to Graph::parameters (the optimizer's order).
  TensorId param(const std::string& name, std::vector<int64_t> dims);

  using Named = std::initializer_list<std::pair<std::string_view, TensorId>>;
  // Operands by their schema names (graph/op_schema.h), placed in schema order.
  void op(OpKind kind, Named in, Named out, OpAttrs attrs = {});

  // y = dropout(x), or x itself when p == 0 (the op is omitted, as docs/ops.md says).
  TensorId dropout(TensorId x, const std::string& name);
  // GPT-2's LayerNorm with weight and bias "<prefix>.weight", "<prefix>.bias".
  TensorId layernorm(TensorId x, const std::string& prefix, int64_t rows, int64_t c);
  // HF Conv1D: weight [in, out] (or [out, in] in a QLoRA base's blocks, conv1d_held_out_in) and
  // bias, output [rows, out].
  TensorId conv1d(TensorId x, const std::string& prefix, int64_t rows, int64_t in, int64_t out);
  // nn.Linear: weight [out, in], bias iff `bias`; output of shape `out_dims` (last axis out).
  TensorId linear(TensorId x, const std::string& prefix, std::vector<int64_t> out_dims, int64_t in,
                  bool bias);

 private:
  Graph& g_;
  const TrainShape& shape_;
  int block_;
  uint32_t* dropout_counter_;
};

}  // namespace remat
