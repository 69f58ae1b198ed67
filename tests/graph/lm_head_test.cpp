// The LM head as one chunked op (graph/lm_head.h): both families emit head_loss with a
// [chunk, V] workspace instead of whole logits, autodiff gives it one backward with its own
// workspace (dx only when LoRA freezes the head's weight), and the chunk size is checked where
// the shape is.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "graph/lm_head.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"

using namespace remat;

namespace {

int count_kind(const Graph& g, OpKind k) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == k;
  return n;
}

const Op& only(const Graph& g, OpKind k) {
  for (const Op& op : g.ops)
    if (op.kind == k) return op;
  FAIL("no " << op_kind_name(k));
  throw std::logic_error("unreachable");
}

void check_chunked_head(const ModelConfig& m) {
  const TrainShape s{4, 64, 0.0f, DType::f32, 64};
  const Graph g = build_training_model(m, s);
  INFO(m.name());
  CHECK(g.logits == kNoTensor);
  CHECK(count_kind(g, OpKind::cross_entropy) == 0);
  CHECK(count_kind(g, OpKind::cross_entropy_backward) == 0);
  const Op& f = only(g, OpKind::head_loss);
  const Op& b = only(g, OpKind::head_loss_backward);
  CHECK(f.attrs.chunk_rows == 64);
  CHECK(b.attrs.chunk_rows == 64);
  CHECK(check_operand_arity(f.kind, f.attrs, f.inputs.size(), f.outputs.size()).empty());
  CHECK(check_operand_arity(b.kind, b.attrs, b.inputs.size(), b.outputs.size()).empty());
  const Tensor& ws = g.tensor(f.outputs[slot::head_loss::logits]);
  const Tensor& dws = g.tensor(b.outputs[slot::head_loss_backward::dlogits]);
  CHECK(ws.shape == std::vector<int64_t>{64, m.vocab});
  CHECK(ws.role == Role::workspace);
  CHECK(dws.shape == ws.shape);
  CHECK(dws.role == Role::workspace);
  CHECK(ws.id != dws.id);
  CHECK(f.outputs[slot::head_loss::losses] == g.losses);
  // The head's backward is the first writer of the head weight's gradient: it overwrites.
  CHECK(b.attrs.accumulate == std::vector<uint8_t>{0, 0, 0});
  CHECK(b.outputs[slot::head_loss_backward::dweight] ==
        g.grad_of.at(size_t(f.inputs[slot::head_loss::weight])));
  CHECK(b.flops > f.flops);
  // No tensor of the step holds B*T rows of vocabulary width.
  for (const Tensor& t : g.tensors)
    if (!t.persistent) CHECK(t.shape != std::vector<int64_t>{4 * 64, m.vocab});
}

// LoRA freezes the head's weight (GPT-2's tied wte, Llama's tied embedding or untied lm_head):
// the chunked backward then writes dx only, and nothing of the weight's gradient exists.
void check_frozen_head(const ModelConfig& m) {
  const TrainShape s{3, 23, 0.0f, DType::f32, 64};
  LoraSpec lora;
  lora.rank = 4;
  const Graph g = build_training_model(m, s, lora);
  const Graph trained = build_training_model(m, s);
  INFO(m.name() << (m.tied_head ? " tied" : " untied"));
  const Op& f = only(g, OpKind::head_loss);
  const Op& b = only(g, OpKind::head_loss_backward);
  const TensorId w = f.inputs[slot::head_loss::weight];
  CHECK(std::count(g.frozen.begin(), g.frozen.end(), w) == 1);
  CHECK(b.attrs.frozen);
  CHECK(b.outputs.size() == 2);
  CHECK(check_operand_arity(b.kind, b.attrs, b.inputs.size(), b.outputs.size()).empty());
  // The same operands with a dweight are refused for a frozen op, and vice versa.
  CHECK_FALSE(check_operand_arity(b.kind, b.attrs, 3, 3).empty());
  OpAttrs trained_attrs = b.attrs;
  trained_attrs.frozen = false;
  CHECK_FALSE(check_operand_arity(b.kind, trained_attrs, 3, 2).empty());
  CHECK(b.outputs[slot::head_loss_backward::dx] ==
        g.grad_of.at(size_t(f.inputs[slot::head_loss::x])));
  CHECK(g.tensor(b.outputs[slot::head_loss_backward::dlogits]).role == Role::workspace);
  CHECK(b.attrs.accumulate == std::vector<uint8_t>{0, 0});
  CHECK(g.grad_of.at(size_t(w)) == kNoTensor);
  for (const Tensor& t : g.tensors) CHECK(t.name != "grad." + g.tensor(w).name);
  // x is still read: the recomputed logits are what dx needs.
  CHECK(b.inputs == only(trained, OpKind::head_loss_backward).inputs);
  // One head matmul fewer than the trained head's backward (no dW).
  CHECK(b.flops < only(trained, OpKind::head_loss_backward).flops);
}

}  // namespace

TEST_CASE("a frozen head (LoRA) gets a dx-only chunked backward with no weight gradient") {
  check_frozen_head(ModelConfig::preset("tiny"));
  ModelConfig llama = ModelConfig::preset("llama-tiny");
  check_frozen_head(llama);
  llama.tied_head = false;
  check_frozen_head(llama);
}

TEST_CASE("a chunked head is one head_loss op and its backward, with chunk-sized workspaces") {
  check_chunked_head(ModelConfig::preset("tiny"));
  check_chunked_head(ModelConfig::preset("llama-tiny"));
  ModelConfig untied = ModelConfig::preset("llama-tiny");
  untied.tied_head = false;
  check_chunked_head(untied);
}

TEST_CASE("loss chunk 0 keeps today's head, and a chunk of at least B*T is one chunk") {
  const ModelConfig m = ModelConfig::preset("tiny");
  const Graph whole = build_training_model(m, TrainShape{2, 16, 0.0f, DType::f32, 0});
  CHECK(whole.logits != kNoTensor);
  CHECK(count_kind(whole, OpKind::cross_entropy) == 1);
  CHECK(count_kind(whole, OpKind::head_loss) == 0);
  const Graph one = build_training_model(m, TrainShape{2, 16, 0.0f, DType::f32, 50});
  CHECK(only(one, OpKind::head_loss).attrs.chunk_rows == 32);
  CHECK(lm_head_chunk_rows(0, 100) == 0);
  CHECK(lm_head_chunk_rows(64, 100) == 64);
  CHECK(lm_head_chunk_rows(128, 100) == 100);
}

TEST_CASE("a loss chunk that would misalign a chunk's rows is refused") {
  const ModelConfig m = ModelConfig::preset("tiny");
  CHECK_THROWS_AS(TrainShape({4, 64, 0.0f, DType::f32, 32}).validate(m), std::invalid_argument);
  CHECK_THROWS_AS(TrainShape({4, 64, 0.0f, DType::f32, -64}).validate(m), std::invalid_argument);
  CHECK_NOTHROW(TrainShape({4, 64, 0.0f, DType::f32, 192}).validate(m));
  CHECK_NOTHROW(TrainShape({4, 64, 0.0f, DType::f32, 300}).validate(m));
}
