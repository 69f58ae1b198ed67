// The GPT-2 graph: Hugging Face parameter names and shapes, tied head, dropout only when p > 0,
// presets and validation.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "graph/autodiff.h"
#include "graph/gpt_builder.h"

namespace remat {
namespace {

std::map<std::string, std::vector<int64_t>> parameter_shapes(const Graph& g) {
  std::map<std::string, std::vector<int64_t>> out;
  for (TensorId p : g.parameters) out[g.tensor(p).name] = g.tensor(p).shape;
  return out;
}

int count_kind(const Graph& g, OpKind k) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == k;
  return n;
}

}  // namespace

TEST_CASE("graph: gpt2 has the Hugging Face parameters with Conv1D shapes") {
  const Graph g = build_gpt(ModelConfig::preset("gpt2"), TrainShape{4, 1024, 0.0f, DType::f32});
  const auto shapes = parameter_shapes(g);
  CHECK(shapes.size() == 2 + 12 * 12 + 2);
  CHECK(shapes.at("wte.weight") == std::vector<int64_t>{50257, 768});
  CHECK(shapes.at("wpe.weight") == std::vector<int64_t>{1024, 768});
  CHECK(shapes.at("h.0.ln_1.weight") == std::vector<int64_t>{768});
  CHECK(shapes.at("h.11.attn.c_attn.weight") == std::vector<int64_t>{768, 2304});
  CHECK(shapes.at("h.11.attn.c_attn.bias") == std::vector<int64_t>{2304});
  CHECK(shapes.at("h.3.attn.c_proj.weight") == std::vector<int64_t>{768, 768});
  CHECK(shapes.at("h.3.mlp.c_fc.weight") == std::vector<int64_t>{768, 3072});
  CHECK(shapes.at("h.3.mlp.c_proj.weight") == std::vector<int64_t>{3072, 768});
  CHECK(shapes.at("h.3.ln_2.bias") == std::vector<int64_t>{768});
  CHECK(shapes.at("ln_f.bias") == std::vector<int64_t>{768});
  uint64_t total = 0;
  for (TensorId p : g.parameters) total += static_cast<uint64_t>(g.tensor(p).elements());
  CHECK(total == 124439808);  // GPT-2 small, tied head
  CHECK(total == ModelConfig::preset("gpt2").parameter_count());
}

TEST_CASE("graph: the chain is embedding, blocks, head, the head reads wte out_in") {
  const Graph g = build_gpt(ModelConfig::preset("tiny"), TrainShape{});
  REQUIRE(g.blocks.size() == 6);
  CHECK(g.blocks.front().name == "embedding");
  CHECK(g.blocks.back().name == "head");
  for (size_t i = 1; i < g.blocks.size(); ++i) CHECK(g.blocks[i].input == g.blocks[i - 1].output);
  const Op& head = g.ops[static_cast<size_t>(g.blocks.back().forward_ops[1])];
  CHECK(head.kind == OpKind::matmul);
  CHECK(head.attrs.w_layout == WeightLayout::out_in);
  CHECK(!head.attrs.has_bias);
  CHECK(g.tensor(head.inputs[1]).name == "wte.weight");
  CHECK(g.tensor(g.tokens).dtype == DType::u32);
  CHECK(g.tensor(g.losses).persistent);
  // Each block reads only persistent tensors, its chain input and its own tensors.
  for (size_t b = 0; b < g.blocks.size(); ++b)
    for (int i : g.blocks[b].forward_ops)
      for (TensorId t : g.ops[static_cast<size_t>(i)].inputs) {
        const Tensor& x = g.tensor(t);
        CHECK((x.persistent || t == g.blocks[b].input || x.block == static_cast<int>(b)));
      }
}

TEST_CASE("graph: dropout ops appear only when p > 0, with distinct stream ids") {
  CHECK(count_kind(build_gpt(ModelConfig::preset("tiny"), TrainShape{}), OpKind::dropout) == 0);
  TrainShape s;
  s.dropout = 0.1f;
  const Graph g = build_gpt(ModelConfig::preset("tiny"), s);
  CHECK(count_kind(g, OpKind::dropout) == 1 + 2 * 4);  // embedding + attn/mlp per block
  std::set<uint32_t> ids;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::dropout) ids.insert(op.attrs.dropout_id);
  CHECK(ids.size() == 9);
}

TEST_CASE("graph: presets have the published shapes") {
  const ModelConfig xl = ModelConfig::preset("gpt2-xl");
  CHECK(
      (xl.layers == 48 && xl.dim == 1600 && xl.heads == 25 && xl.vocab == 50257 && xl.ctx == 1024));
  const ModelConfig m = ModelConfig::preset("gpt2-medium");
  CHECK((m.layers == 24 && m.dim == 1024 && m.heads == 16));
  const ModelConfig l = ModelConfig::preset("gpt2-large");
  CHECK((l.layers == 36 && l.dim == 1280 && l.heads == 20));
  const ModelConfig t = ModelConfig::preset("tiny");
  CHECK((t.layers == 4 && t.dim == 128 && t.heads == 4 && t.ctx == 64 && t.vocab == 256));
}

TEST_CASE("graph: invalid shapes are invalid_argument saying what would be right") {
  REQUIRE_THROWS_WITH(ModelConfig::preset("gpt5"), Catch::Contains("use one of tiny, gpt2"));
  ModelConfig c = ModelConfig::preset("tiny");
  c.heads = 3;
  REQUIRE_THROWS_WITH(c.validate(), Catch::Contains("must divide dim"));
  c = ModelConfig::preset("tiny");
  c.layers = 0;
  REQUIRE_THROWS_WITH(c.validate(), Catch::Contains("layers must be positive"));
  TrainShape s;
  s.seq = 65;
  REQUIRE_THROWS_WITH(build_gpt(ModelConfig::preset("tiny"), s),
                      Catch::Contains("at most ctx (64)"));
  s = TrainShape{};
  s.batch = 0;
  REQUIRE_THROWS_AS(build_gpt(ModelConfig::preset("tiny"), s), std::invalid_argument);
  REQUIRE_THROWS_WITH(parse_activation_dtype("f8"), Catch::Contains("f32, f16 or bf16"));
}

TEST_CASE("graph: activation dtype sizes activations, not parameters") {
  TrainShape s;
  s.activation_dtype = DType::bf16;
  const Graph g = build_gpt(ModelConfig::preset("tiny"), s);
  CHECK(g.tensor(g.blocks[0].output).bytes() == 4 * 64 * 128 * 2);
  CHECK(g.tensor(g.parameters[0]).dtype == DType::f32);
}

TEST_CASE("graph: 16-bit activations keep statistics, losses and every gradient f32") {
  TrainShape s;
  s.activation_dtype = DType::f16;
  s.dropout = 0.1f;
  Graph g = build_gpt(ModelConfig::preset("tiny"), s);
  autodiff(g);
  int sixteen = 0;
  for (const Tensor& t : g.tensors) {
    INFO(t.name);
    const bool stat = t.name.ends_with(".mean") || t.name.ends_with(".rstd") ||
                      t.name.ends_with(".lse") || t.name == "losses";
    if (t.role == Role::activation && !stat) {
      CHECK(t.dtype == DType::f16);
      ++sixteen;
    } else if (t.role != Role::input) {
      CHECK(t.dtype == DType::f32);
    }
  }
  CHECK(sixteen > 0);
}

}  // namespace remat
