// The checker must catch broken plans: each corruption below is one way a planner bug would show.
#include <catch2/catch.hpp>

#include "graph/autodiff.h"
#include "planner/plan.h"
#include "planner/verify.h"

namespace remat {
namespace {

struct Fixture {
  Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  Plan p = plan_graph(g, {Policy::parse("every:2"), std::nullopt, 256, nullptr});
};

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  for (const auto& p : problems)
    if (p.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("verify: a sound plan passes") {
  Fixture f;
  REQUIRE(verify_plan(f.g, f.p).empty());
}

TEST_CASE("verify: overlapping live tensors in the arena are caught") {
  Fixture f;
  // Put the first recomputed tensor on top of a tensor that is live at the same time.
  PlannedTensor* victim = nullptr;
  for (auto& t : f.p.tensors)
    if (t.placement == Placement::arena && t.tensor.name.find("@recompute") != std::string::npos) {
      victim = &t;
      break;
    }
  REQUIRE(victim != nullptr);
  for (const auto& other : f.p.tensors)
    if (&other != victim && other.placement == Placement::arena &&
        other.first_step <= victim->last_step && victim->first_step <= other.last_step) {
      victim->offset = other.offset;
      break;
    }
  const auto problems = verify_plan(f.g, f.p);
  CHECK(mentions(problems, "overlap"));
}

TEST_CASE("verify: reading a dropped value instead of its recompute is caught") {
  Fixture f;
  // Point a recompute consumer back at the original (already dead) forward tensor.
  bool changed = false;
  for (auto& s : f.p.steps) {
    if (s.phase != Phase::backward) continue;
    for (TensorId& t : s.inputs)
      if (f.p.tensors[static_cast<size_t>(t)].original != t) {
        t = f.p.tensors[static_cast<size_t>(t)].original;
        changed = true;
        break;
      }
    if (changed) break;
  }
  REQUIRE(changed);
  CHECK(!verify_plan(f.g, f.p).empty());
}

TEST_CASE("verify: a missing recompute step is caught") {
  Fixture f;
  auto it = std::find_if(f.p.steps.begin(), f.p.steps.end(),
                         [](const Step& s) { return s.phase == Phase::recompute; });
  REQUIRE(it != f.p.steps.end());
  f.p.steps.erase(it);
  CHECK(!verify_plan(f.g, f.p).empty());
}

TEST_CASE("verify: a wrong accumulate flag is caught") {
  Fixture f;
  for (auto& s : f.p.steps)
    if (s.kind == OpKind::embedding_backward) s.attrs.accumulate[0] = 0;
  CHECK(mentions(verify_plan(f.g, f.p), "does not match"));
  Fixture h;
  // Same flip on the graph as well: then the contract check itself must fire.
  for (auto& op : h.g.ops)
    if (op.kind == OpKind::embedding_backward) op.attrs.accumulate[0] = 0;
  for (auto& s : h.p.steps)
    if (s.kind == OpKind::embedding_backward) s.attrs.accumulate[0] = 0;
  CHECK(mentions(verify_plan(h.g, h.p), "overwrites an earlier contribution"));
}

TEST_CASE("verify: reordered backward steps and an arena over budget are caught") {
  Fixture f;
  std::vector<size_t> bwd;
  for (size_t i = 0; i < f.p.steps.size(); ++i)
    if (f.p.steps[i].phase == Phase::backward) bwd.push_back(i);
  std::swap(f.p.steps[bwd[3]], f.p.steps[bwd[4]]);
  CHECK(mentions(verify_plan(f.g, f.p), "backward order"));
  Fixture b;
  b.p.budget_bytes = b.p.arena_bytes - 1;
  CHECK(mentions(verify_plan(b.g, b.p), "budget"));
}

TEST_CASE("verify: an arena too small for its offsets is caught") {
  Fixture f;
  f.p.arena_bytes /= 2;
  CHECK(mentions(verify_plan(f.g, f.p), "past the arena"));
}

}  // namespace remat

namespace remat {

TEST_CASE("verify: a step or graph op whose arity differs from its schema is caught") {
  Fixture f;
  Step* mm = nullptr;
  for (auto& s : f.p.steps)
    if (s.kind == OpKind::matmul && s.attrs.has_bias) {
      mm = &s;
      break;
    }
  REQUIRE(mm != nullptr);
  mm->inputs.pop_back();  // the bias the attributes promise
  const auto problems = verify_plan(f.g, f.p);
  CHECK(mentions(problems, "matmul takes 3 inputs (x, weight, bias?, residual?; has_bias), has 2"));

  Fixture h;
  for (auto& op : h.g.ops)
    if (op.kind == OpKind::adamw) {
      op.inputs.pop_back();  // drop grad_norm
      break;
    }
  CHECK(mentions(verify_plan(h.g, h.p), "adamw takes 5 inputs"));
}

}  // namespace remat
