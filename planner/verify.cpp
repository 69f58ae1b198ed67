#include "planner/verify.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/autodiff.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

constexpr size_t kMaxProblems = 40;

class Verifier {
 public:
  Verifier(const Graph& g, const Plan& p) : g_(g), p_(p) {}

  std::vector<std::string> run() {
    check_graph_arity();
    check_tensors();
    if (!problems_.empty()) return problems_;
    check_order();
    execute();
    check_static_layout();
    return problems_;
  }

 private:
  void fail(const std::string& what) {
    if (problems_.size() < kMaxProblems) problems_.push_back(what);
  }
  const PlannedTensor& pt(TensorId id) const { return p_.tensors[static_cast<size_t>(id)]; }
  bool valid(TensorId id) const { return id >= 0 && static_cast<size_t>(id) < p_.tensors.size(); }

  // Every graph op has the operands its kind's schema declares (graph/op_schema.h); the steps are
  // checked against the same schema as they execute.
  void check_graph_arity() {
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& op = g_.ops[i];
      const std::string why =
          check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size());
      if (!why.empty()) fail("graph op " + std::to_string(i) + ": " + why);
    }
  }

  void check_tensors() {
    if (p_.tensors.size() < g_.tensors.size()) fail("plan has fewer tensors than the graph");
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const PlannedTensor& t = p_.tensors[i];
      if (t.tensor.id != static_cast<TensorId>(i))
        fail("tensor " + std::to_string(i) + " has the wrong id");
      if (t.original < 0 || static_cast<size_t>(t.original) >= g_.tensors.size()) {
        fail(t.tensor.name + " names no graph tensor as its original");
        continue;
      }
      const Tensor& o = g_.tensor(t.original);
      if (o.shape != t.tensor.shape || o.dtype != t.tensor.dtype || o.role != t.tensor.role)
        fail(t.tensor.name + " differs in shape, dtype or role from " + o.name);
      if (t.bytes != o.bytes()) fail(t.tensor.name + " has the wrong byte size");
      if (t.placement != Placement::unused && t.offset % p_.alignment != 0)
        fail(t.tensor.name + " is not aligned to " + std::to_string(p_.alignment));
    }
  }

  void check_order() {
    std::vector<int> fwd, bwd, opt, expect_fwd, expect_bwd;
    for (const Step& s : p_.steps) {
      if (s.phase == Phase::forward) fwd.push_back(s.source_op);
      if (s.phase == Phase::backward) bwd.push_back(s.source_op);
      if (s.phase == Phase::optimizer) opt.push_back(s.source_op);
      if (s.phase == Phase::recompute && (s.source_op < 0 || is_backward_kind(s.kind)))
        fail("a recompute step runs a non-forward op");
    }
    for (const Block& b : g_.blocks)
      expect_fwd.insert(expect_fwd.end(), b.forward_ops.begin(), b.forward_ops.end());
    for (auto b = g_.blocks.rbegin(); b != g_.blocks.rend(); ++b)
      expect_bwd.insert(expect_bwd.end(), b->backward_ops.begin(), b->backward_ops.end());
    std::vector<int> sorted_fwd = fwd;
    std::sort(sorted_fwd.begin(), sorted_fwd.end());
    std::vector<int> sorted_expect = expect_fwd;
    std::sort(sorted_expect.begin(), sorted_expect.end());
    if (sorted_fwd != sorted_expect)
      fail("the forward phase does not run every forward op exactly once");
    if (bwd != expect_bwd) fail("the backward steps are not the graph's backward order");
    if (opt != g_.optimizer_ops)
      fail("the optimizer steps are not grad_norm then one adamw per parameter");
  }

  // The graph op whose value graph tensor u holds in the forward pass.
  int producer(TensorId u) {
    if (producers_.empty()) producers_ = g_.first_producers();
    return producers_[static_cast<size_t>(u)];
  }
  // The backward ops before graph op `before` that write gradient u: what a reader at `before`
  // must see. Usually every writer of u; a gradient forwarded through a residual (graph/
  // autodiff.cpp) is read while later ops still add to it.
  std::multiset<int> writers_before(TensorId u, int before) {
    std::multiset<int> w;
    for (size_t i = 0; i < static_cast<size_t>(before); ++i)
      for (TensorId t : g_.ops[i].outputs)
        if (t == u && is_backward_kind(g_.ops[i].kind)) w.insert(static_cast<int>(i));
    return w;
  }
  bool overlaps(TensorId a, TensorId b) const {
    const PlannedTensor &x = pt(a), &y = pt(b);
    return x.placement == y.placement && x.placement != Placement::unused &&
           x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  }

  void read(const Step& s, size_t slot, TensorId id, const std::string& where) {
    const Op& op = g_.ops[static_cast<size_t>(s.source_op)];
    const TensorId u = op.inputs[slot];
    if (pt(id).original != u)
      return fail(where + " reads " + pt(id).tensor.name + " instead of " + g_.tensor(u).name);
    if (pt(id).placement == Placement::arena && !resident_.count(id))
      return fail(where + " reads " + pt(id).tensor.name +
                  " after its bytes were overwritten or before it was written");
    const Tensor& ut = g_.tensor(u);
    if (ut.role == Role::activation && !ut.persistent) {
      if (value_[id] != producer(u))
        fail(where + " reads " + pt(id).tensor.name + " which does not hold its producer's value");
    } else if (ut.role == Role::activation_grad || ut.role == Role::parameter_grad) {
      if (contributions_[id] != writers_before(u, s.source_op))
        fail(where + " reads gradient " + pt(id).tensor.name + " before it is complete");
    } else if (ut.role == Role::workspace && value_[id] < 0) {
      fail(where + " reads " + pt(id).tensor.name + " before it is written");
    }
  }

  void write(const Step& s, size_t slot, TensorId id, const std::string& where) {
    const Op& op = g_.ops[static_cast<size_t>(s.source_op)];
    const TensorId u = op.outputs[slot];
    if (pt(id).original != u)
      return fail(where + " writes " + pt(id).tensor.name + " instead of " + g_.tensor(u).name);
    const Role role = g_.tensor(u).role;
    if (role == Role::activation_grad || role == Role::parameter_grad) {
      const bool acc = slot < s.attrs.accumulate.size() && s.attrs.accumulate[slot];
      // A write of only the places its forward read (graph/autodiff.h): each part first
      // overwrites on its own.
      if (const int part = in_place_gradient_offset(g_, op, slot); part >= 0) {
        const bool earlier = !parts_.insert({id, part}).second;
        if (acc != earlier)
          fail(
              where +
              (acc ? " accumulates into an unwritten part of " : " overwrites a written part of ") +
              pt(id).tensor.name);
      } else if (acc == contributions_[id].empty())
        fail(where +
             (acc ? " accumulates into an unwritten " : " overwrites an earlier contribution to ") +
             pt(id).tensor.name);
      contributions_[id].insert(s.source_op);
    } else {
      if (pt(id).tensor.persistent && role == Role::activation && value_[id] >= 0)
        fail(where + " writes the persistent " + pt(id).tensor.name + " twice");
      value_[id] = s.source_op;
    }
    if (pt(id).placement != Placement::arena) return;
    // Symbolic memory: whatever else lived in these bytes is gone.
    for (auto it = resident_.begin(); it != resident_.end();)
      it = (*it != id && overlaps(*it, id)) ? resident_.erase(it) : std::next(it);
    resident_.insert(id);
  }

  void execute() {
    value_.assign(p_.tensors.size(), -1);
    contributions_.assign(p_.tensors.size(), {});
    parts_.clear();
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      const Step& s = p_.steps[i];
      const std::string where =
          "step " + std::to_string(i) + " (" + std::string(op_kind_name(s.kind)) + ")";
      if (s.source_op < 0 || static_cast<size_t>(s.source_op) >= g_.ops.size()) {
        fail(where + " names no graph op");
        continue;
      }
      if (const std::string why =
              check_operand_arity(s.kind, s.attrs, s.inputs.size(), s.outputs.size());
          !why.empty()) {
        fail(where + ": " + why);
        continue;
      }
      const Op& op = g_.ops[static_cast<size_t>(s.source_op)];
      if (op.kind != s.kind || !(op.attrs == s.attrs) || op.inputs.size() != s.inputs.size() ||
          op.outputs.size() != s.outputs.size()) {
        fail(where + " does not match its graph op's kind, attributes or arity");
        continue;
      }
      bool ok = true;
      for (TensorId t : s.inputs) ok = ok && valid(t);
      for (TensorId t : s.outputs) ok = ok && valid(t);
      if (!ok) {
        fail(where + " names a tensor that does not exist");
        continue;
      }
      for (size_t k = 0; k < s.inputs.size(); ++k) read(s, k, s.inputs[k], where);
      for (TensorId o : s.outputs)
        for (TensorId in : s.inputs)
          if (o != in && overlaps(o, in))
            fail(where + " writes " + pt(o).tensor.name + " over its input " + pt(in).tensor.name);
      for (size_t k = 0; k < s.outputs.size(); ++k) write(s, k, s.outputs[k], where);
    }
    if (value_[static_cast<size_t>(g_.losses)] < 0) fail("the loss is never written");
  }

  void check_static_layout() {
    // Lifetimes recomputed from the steps, not taken from the plan.
    std::vector<std::pair<int, int>> life(p_.tensors.size(), {-1, -1});
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      for (const auto* list : {&p_.steps[i].inputs, &p_.steps[i].outputs})
        for (TensorId t : *list) {
          auto& l = life[static_cast<size_t>(t)];
          if (l.first < 0) l.first = static_cast<int>(i);
          l.second = static_cast<int>(i);
        }
    }
    std::vector<TensorId> arena, persistent;
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const PlannedTensor& t = p_.tensors[i];
      const bool touched = life[i].first >= 0;
      if (t.tensor.persistent != (t.placement == Placement::persistent))
        fail(t.tensor.name +
             (t.tensor.persistent ? " must be persistent" : " must not be persistent"));
      if (!t.tensor.persistent && touched && t.placement != Placement::arena)
        fail(t.tensor.name + " is used but has no arena place");
      if (t.placement == Placement::arena) {
        if (t.offset + t.bytes > p_.arena_bytes) fail(t.tensor.name + " ends past the arena");
        if (t.first_step != life[i].first || t.last_step != life[i].second)
          fail(t.tensor.name + " has a wrong lifetime");
        arena.push_back(static_cast<TensorId>(i));
      }
      if (t.placement == Placement::persistent) {
        if (t.offset + t.bytes > p_.persistent_bytes)
          fail(t.tensor.name + " ends past the persistent buffer");
        persistent.push_back(static_cast<TensorId>(i));
      }
      if (t.placement != Placement::unused && p_.page_bytes && t.bytes &&
          t.offset / p_.page_bytes != (t.offset + t.bytes - 1) / p_.page_bytes)
        fail(t.tensor.name + " crosses an allocation boundary");
    }
    check_allocations(p_.persistent_allocations, p_.persistent_bytes, "persistent buffer");
    check_allocations(p_.arena_allocations, p_.arena_bytes, "arena");
    for (size_t a = 0; a < arena.size(); ++a)
      for (size_t b = a + 1; b < arena.size(); ++b) {
        const auto &la = life[static_cast<size_t>(arena[a])],
                   &lb = life[static_cast<size_t>(arena[b])];
        if (la.first <= lb.second && lb.first <= la.second && overlaps(arena[a], arena[b]))
          fail(pt(arena[a]).tensor.name + " and " + pt(arena[b]).tensor.name +
               " are live together and overlap");
      }
    for (size_t a = 0; a < persistent.size(); ++a)
      for (size_t b = a + 1; b < persistent.size(); ++b)
        if (overlaps(persistent[a], persistent[b]))
          fail(pt(persistent[a]).tensor.name + " and " + pt(persistent[b]).tensor.name +
               " overlap in the persistent buffer");
    if (p_.budget_bytes && p_.arena_bytes > *p_.budget_bytes) fail("the arena exceeds the budget");
    if (p_.arena_lower_bound > p_.arena_bytes) fail("the arena is below its own lower bound");
  }

  // A buffer's allocations: pages of page_bytes, the last one shorter, summing to its size.
  void check_allocations(const std::vector<uint64_t>& sizes, uint64_t total, const char* what) {
    uint64_t sum = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      sum += sizes[i];
      if (p_.page_bytes && sizes[i] > p_.page_bytes)
        fail(std::string("an allocation of the ") + what + " exceeds the page size");
      if (p_.page_bytes && i + 1 < sizes.size() && sizes[i] != p_.page_bytes)
        fail(std::string("an allocation of the ") + what + " before the last is not a full page");
    }
    if (sum != total) fail(std::string("the allocations of the ") + what + " do not sum to it");
  }

  const Graph& g_;
  const Plan& p_;
  std::vector<std::string> problems_;
  std::vector<int> producers_;
  std::vector<int> value_;                         // per tensor: graph op whose value it holds
  std::vector<std::multiset<int>> contributions_;  // per gradient: backward ops added so far
  std::set<std::pair<TensorId, int>> parts_;       // (gradient, slice offset) written in part
  std::set<TensorId> resident_;                    // arena tensors whose bytes are intact
};

}  // namespace

std::vector<std::string> verify_plan(const Graph& graph, const Plan& plan) {
  return Verifier(graph, plan).run();
}

}  // namespace remat
