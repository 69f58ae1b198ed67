// Graphs with residuals fused into their matmuls (graph/residual_fusion.h) plan and pass the
// plan checker under every policy: the fused matmul reads its residual like any input, and
// the matmul's own output, no longer written, takes no arena bytes.
#include <catch2/catch.hpp>

#include "graph/model_builder.h"
#include "planner/plan.h"
#include "planner/verify.h"

using namespace remat;

TEST_CASE("residual fusion: fused graphs plan soundly, and no bigger than unfused ones") {
  for (const char* model : {"tiny", "llama-tiny"})
    for (const char* policy : {"none", "every:1", "every:2", "selective"}) {
      DYNAMIC_SECTION(model << " " << policy) {
        TrainShape fused, apart;
        apart.fuse_residuals = false;
        const Graph g = build_training_model(ModelConfig::preset(model), fused);
        const Graph h = build_training_model(ModelConfig::preset(model), apart);
        const PlanRequest req{Policy::parse(policy), std::nullopt, 256, nullptr};
        const Plan p = plan_graph(g, req), q = plan_graph(h, req);
        CHECK(verify_plan(g, p).empty());
        CHECK(p.arena_bytes <= q.arena_bytes);
      }
    }
}
