// The optimizer table (one AdamW and one gradient-norm dispatch per binding window) against the
// per-tensor dispatches of optimizer.h: the same partial sums, norm and clip scale, and the same
// parameters and moments bit for bit after two clipped steps, with the texel and the storage
// kernels, in one window and in several (a lowered binding limit also cuts a tensor in pieces).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "runtime/kernels/optimizer.h"
#include "runtime/kernels/optimizer_table.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

constexpr uint64_t kAlign = 256;  // as the planner places persistent tensors

// Parameters, gradients, first and second moments of tensors of `counts` floats, each list
// after the other in one buffer (planner/plan.cpp's persistent order).
struct Model {
  std::vector<uint64_t> counts;
  std::vector<uint64_t> offsets[4];  // bytes: param, grad, m, v of each tensor
  uint64_t bytes = 0;
};

Model lay_out(std::vector<uint64_t> counts) {
  Model m;
  m.counts = std::move(counts);
  for (auto& list : m.offsets)
    for (uint64_t c : m.counts) {
      list.push_back(m.bytes);
      m.bytes += (c * sizeof(float) + kAlign - 1) / kAlign * kAlign;
    }
  return m;
}

struct Result {
  std::vector<float> state;  // the whole buffer after the steps
  std::vector<float> partials;
  push::GradNormResult norm{};
  std::size_t dispatches = 0;
  std::size_t table_texels = 0;  // dispatches of the *_table_texels kernels
};

// Two clipped AdamW steps (the gradient norm first) from the same start, per tensor or by table.
Result run(const Model& model, const DeviceQuirks& q, bool by_table, int steps = 2,
           double* best_ms = nullptr) {
  Buffer all = test::upload_buffer(test::random_floats(model.bytes / 4, 5, -0.5f, 0.5f), "state",
                                   model.bytes);
  // Second moments must not be negative.
  for (std::size_t i = 0; i < model.counts.size(); ++i)
    upload(test::device(), all, model.offsets[3][i],
           test::random_floats(model.counts[i], 60 + i, 0.0f, 0.01f).data(),
           model.counts[i] * sizeof(float));
  Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
  const uint32_t floats = kernels::grad_norm_partials_floats(q, model.counts);
  Buffer partials = test::garbage_buffer<float>(floats, "partials");
  Buffer norm = test::garbage_buffer<push::GradNormResult>(1, "norm");
  std::vector<kernels::OptimizerTensor> tensors;
  std::vector<BufferSlice> grads;
  for (std::size_t i = 0; i < model.counts.size(); ++i) {
    const uint64_t b = model.counts[i] * sizeof(float);
    auto at = [&](int k) { return BufferSlice{all.handle(), model.offsets[k][i], b}; };
    tensors.push_back({at(0), at(1), at(2), at(3), model.counts[i], i % 2 == 0});
    grads.push_back(at(1));
  }
  std::vector<Dispatch> ds;
  std::optional<Buffer> table;
  if (by_table) {
    const auto t = kernels::optimizer_table(q, tensors, partials.whole());
    REQUIRE(t.partials_floats == floats);
    table.emplace(test::upload_buffer(t.pieces, "table"));
    ds = kernels::grad_norm_table(q, t, table->whole(), partials.whole(), 0.05f, norm.whole());
    for (Dispatch& d : kernels::adamw_table(t, table->whole(), hyper.whole(), norm.whole()))
      ds.push_back(std::move(d));
  } else {
    ds = kernels::grad_norm(q, grads, model.counts, partials.whole(), 0.05f, norm.whole());
    for (const auto& t : tensors)
      for (Dispatch& d : kernels::adamw_pieces(q, t.param, t.grad, t.m, t.v, hyper.whole(),
                                               norm.whole(), uint32_t(t.count), t.weight_decay))
        ds.push_back(std::move(d));
  }
  Result r;
  r.dispatches = ds.size();
  for (const Dispatch& d : ds)
    r.table_texels +=
        d.kernel == KernelId::adamw_table_texels || d.kernel == KernelId::grad_norm_table_texels;
  Executor ex(test::kernels(), std::move(ds), ExecutorOptions{.timestamps = best_ms != nullptr});
  for (uint32_t step = 1; step <= uint32_t(steps); ++step) {
    for (std::size_t i = 0; i < model.counts.size(); ++i)
      upload(test::device(), all, model.offsets[1][i],
             test::random_floats(model.counts[i], 100 * step + i).data(),
             model.counts[i] * sizeof(float));
    const push::AdamWHyper h = kernels::adamw_hyper({1e-2, 0.9, 0.95, 1e-8, 0.1}, step);
    upload(test::device(), hyper, 0, &h, sizeof(h));
    ex.run();
    if (best_ms && step > 1) {  // the best step after a warm-up: the machine may be shared
      double ms = 0, adamw = 0;
      const auto times = ex.dispatch_ms();
      for (std::size_t i = 0; i < times.size(); ++i) {
        ms += times[i];
        if (ex.dispatches()[i].label.starts_with("adamw")) adamw += times[i];
      }
      std::printf("  step %u: %.3f ms, AdamW %.3f ms\n", step, ms, adamw);
      *best_ms = step == 2 ? ms : std::min(*best_ms, ms);
    }
  }
  r.state = test::read<float>(all, model.bytes / 4);
  r.partials = test::read<float>(partials, floats);
  r.norm = test::read<push::GradNormResult>(norm, 1)[0];
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("one AdamW and one gradient-norm dispatch per window give the per-tensor bits") {
  struct Case {
    const char* name;
    std::vector<uint64_t> counts;
    uint64_t max_binding;  // 0: the device's
    bool texels;
    std::size_t windows;      // AdamW dispatches by table
    std::size_t texel_table;  // table dispatches that read through texel views
  };
  // 300,000 floats in 256 KiB bindings are five pieces of at most 65,536; every other tensor
  // fits. Counts not a multiple of 4 (1, 7, 1001) keep their window on the storage kernels.
  const std::vector<Case> cases = {
      {"odd counts, one window, texel quirk", {1, 7, 64, 1001, 131'076}, 0, true, 1, 0},
      {"multiples of 4, one window, texels", {64, 1000, 131'076, 300'000}, 0, true, 1, 2},
      {"multiples of 4, one window, storage", {64, 1000, 131'076, 300'000}, 0, false, 1, 0},
      {"odd counts in 256 KiB windows", {7, 300'000, 1001, 64, 131'076}, 256 << 10, true, 0, 0},
      {"pieces in 256 KiB windows, texels", {64, 300'000, 1000, 131'076}, 256 << 10, true, 0, 0},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      DeviceQuirks q = test::device().plan().quirks;
      q.texel_fetch_beats_storage_loads = c.texels;
      if (c.max_binding) q.max_binding_bytes = c.max_binding;
      const Model model = lay_out(c.counts);
      const Result want = run(model, q, false), got = run(model, q, true);
      REQUIRE(want.norm.norm > 0.0f);
      REQUIRE(want.norm.clip_scale < 1.0f);  // the clip scale really scales the gradients
      REQUIRE(same_bits(got.partials, want.partials));
      REQUIRE(std::memcmp(&got.norm, &want.norm, sizeof(got.norm)) == 0);
      REQUIRE(same_bits(got.state, want.state));
      // Windows: one AdamW and one partial-sums dispatch each, and the finalize.
      const std::size_t windows = (got.dispatches - 1) / 2;
      if (c.windows) REQUIRE(windows == c.windows);
      if (c.max_binding) REQUIRE(windows > 1);
      REQUIRE(got.dispatches < want.dispatches);
      if (!c.max_binding) REQUIRE(got.table_texels == c.texel_table);
      if (c.texels && c.max_binding && c.counts[0] == 64) REQUIRE(got.table_texels == 2 * windows);
    }
  }
}

// The optimizer of `tiny` (L4 C128 V256 ctx64: 52 parameter tensors) per tensor and by table,
// best of five steps, AdamW and the gradient norm together. Hidden: run with
// `remat_optimizer_table_test [.bench]`.
TEST_CASE("optimizer dispatches per tensor against one per window at tiny's shapes", "[.bench]") {
  std::vector<uint64_t> counts = {256 * 128, 64 * 128};
  for (int l = 0; l < 4; ++l)
    for (uint64_t c :
         {128, 128, 128 * 384, 384, 128 * 128, 128, 128, 128, 128 * 512, 512, 512 * 128, 128})
      counts.push_back(c);
  counts.insert(counts.end(), {128, 128});
  const Model model = lay_out(counts);
  const DeviceQuirks& q = test::device().plan().quirks;
  double per_tensor = 0, by_table = 0;
  const Result a = run(model, q, false, 6, &per_tensor), b = run(model, q, true, 6, &by_table);
  REQUIRE(same_bits(a.state, b.state));
  std::printf("tiny optimizer: %zu dispatches %.3f ms, by table %zu dispatches %.3f ms\n",
              a.dispatches, per_tensor, b.dispatches, by_table);
}
