// The delta rule backward's workspace: one layout the kernel, autodiff and the planner all read.
#include "graph/delta_rule_workspace.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "tests/graph/random_qwen35.h"

namespace remat {

TEST_CASE("delta rule workspace: the parts are aligned, disjoint and hold the kernels' scratch") {
  for (const DeltaRuleDims d :
       {DeltaRuleDims{2, 3, 12, 40, 64}, DeltaRuleDims{4, 16, 128, 128, 128},
        DeltaRuleDims{1, 1, 4, 4, 1}, DeltaRuleDims{3, 2, 8, 4, 70}}) {
    INFO("rows " << d.rows << " Hv " << d.Hv << " dk " << d.dk << " dv " << d.dv << " L "
                 << d.steps);
    const DeltaRuleWyBackwardScratch k =
        delta_rule_wy_backward_scratch(d.rows, d.Hv, d.dk, d.dv, d.steps);
    const DeltaRuleWorkspaceLayout w = delta_rule_workspace_layout(d);
    CHECK(w.work_bytes == k.work_bytes);
    CHECK(w.keep_bytes == k.keep_bytes);
    CHECK(w.partial_bytes == k.partial_bytes);
    CHECK(w.carry_bytes == 4 * d.rows * d.Hv * d.dk * d.dv);
    for (uint64_t at : {w.work_at, w.keep_at, w.partials_at, w.carry_at[0], w.carry_at[1], w.bytes})
      CHECK(at % 256 == 0);
    CHECK(w.work_at + w.work_bytes <= w.keep_at);
    CHECK(w.keep_at + w.keep_bytes <= w.partials_at);
    CHECK(w.partials_at + w.partial_bytes <= w.carry_at[0]);
    CHECK(w.carry_at[0] + w.carry_bytes <= w.carry_at[1]);
    CHECK(w.carry_at[1] + w.carry_bytes <= w.bytes);
    CHECK(delta_rule_forward_workspace_bytes(d) ==
          delta_rule_wy_forward_scratch(d.rows, d.Hv, d.dk, d.dv, d.steps));
    CHECK(delta_rule_workspace_largest_part(d) ==
          std::max({delta_rule_forward_workspace_bytes(d), w.work_bytes, w.keep_bytes,
                    w.partial_bytes, w.carry_bytes}));
  }
  // The sequential kernels' figures (the benchmarks' peer) at one shape, worked by hand: L 12
  // runs sub-ranges of 4 (3 of them), dk 12 leaves 1024 / 6 = 170 columns, so 64, and dv 40 one
  // block.
  const DeltaRuleKernelScratch k = delta_rule_kernel_scratch({2, 3, 12, 40, 12});
  CHECK(k.state_bytes == 4ull * 6 * (3 + 4) * 12 * 40);
  CHECK(k.partial_bytes == 4ull * 6 * 12 * (1 * 2 * 12 + 2 * 40));
  CHECK(delta_rule_sub_steps(16) == 4);
  CHECK(delta_rule_sub_steps(17) == 5);
  CHECK(delta_rule_backward_columns(128, 128) == 16);
}

// The chunkwise kernels' blocks sit at multiples of 64 from t = 0: a chunk must start at one.
TEST_CASE("delta rule workspace: a chunk length is 0 or a multiple of 64") {
  for (int chunk : {0, 64, 128, 512}) CHECK(std::string(delta_chunk_refusal(chunk)).empty());
  for (int chunk : {1, 8, 63, 65, 100})
    CHECK_THAT(delta_chunk_refusal(chunk), Catch::Contains("must be a multiple of 64"));
  CHECK_THAT(delta_chunk_refusal(-1), Catch::Contains("must be 0"));
}

// The chunkwise kernels' scratch (runtime/kernels/gated_delta_rule_wy.h), worked by hand at one
// shape: rows 2, Hv 3, dk 6 (dk4 8), dv 5 (dv4 8), 70 steps: two blocks of 64.
TEST_CASE("delta rule workspace: the chunkwise kernels' scratch") {
  const uint64_t heads = 2 * 3, blocks = 2;
  const uint64_t forward_block = 64 * (2 * 64 + 5 * 8 + 8) + 64;
  CHECK(delta_rule_wy_forward_scratch(2, 3, 6, 5, 70) == 4 * heads * blocks * forward_block);
  const DeltaRuleWyBackwardScratch b = delta_rule_wy_backward_scratch(2, 3, 6, 5, 70);
  CHECK(b.work_bytes == 4 * heads * blocks * forward_block);
  CHECK(b.keep_bytes == 4 * heads * blocks * (2 * 8 * 8 + 3 * 64 * 8 + 3 * 64 * 64 + 3 * 64 + 8));
  CHECK(b.partial_bytes == 4ull * 2 * 2 * 70 * 3 * 6);
  // A range of one block or less takes one block's scratch.
  CHECK(delta_rule_wy_forward_scratch(1, 1, 6, 5, 1) == 4 * forward_block);
}

// Autodiff sizes each layer's workspace tensor by the layout at the chunk length the graph runs.
TEST_CASE("delta rule workspace: the training graph's workspace is the layout's size") {
  for (int chunk : {0, 64, 128}) {
    INFO("chunk " << chunk);
    const testing::Qwen35Case c = testing::tiny_qwen35(chunk);
    const Graph g = build_training_model(c.model, c.shape, {});
    const Qwen35Layers& l = c.model.qwen35_layers;
    const int len = chunk > 0 && chunk < c.shape.seq ? chunk : c.shape.seq;
    const DeltaRuleWorkspaceLayout w = delta_rule_workspace_layout(
        {uint64_t(c.shape.batch), uint64_t(l.linear_value_heads), uint64_t(l.linear_key_head_dim),
         uint64_t(l.linear_value_head_dim), uint64_t(len)});
    int found = 0;
    for (const Op& op : g.ops) {
      if (op.kind != OpKind::gated_delta_rule_backward) continue;
      const Tensor& ws = g.tensor(op.outputs.at(slot::gated_delta_rule_backward::workspace));
      CHECK(uint64_t(ws.elements()) * 4 == w.bytes);
      ++found;
    }
    CHECK(found == 3);
  }
}

}  // namespace remat
