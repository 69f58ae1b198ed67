// The chunked LM head and loss (runtime/kernels/head_loss.h) against the unchunked kernels it is
// composed of, run over whole logits in their own buffers: per-row losses and dx are the same
// bits whatever the chunk, in every kernel variant and with the weight bound in pieces; dW sums
// its rows chunk by chunk, so it agrees within rounding (|a - b| <= 1e-5 · max |dW|), and is
// the same bits when the chunk covers every row. A frozen weight (no dW buffer) changes no bit of
// the losses or dx.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "base/ignore_target.h"
#include "runtime/kernels/cross_entropy.h"
#include "runtime/kernels/head_loss.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::GradWrite;

namespace {

constexpr uint32_t kRows = 69, kC = 48, kV = 131;  // chunks of 64 end in a ragged one of 5

struct Problem {
  std::vector<float> x = test::random_floats(size_t(kRows) * kC, 31, -2, 2);
  std::vector<float> w = test::random_floats(size_t(kV) * kC, 32);
  std::vector<uint32_t> targets = test::random_indices(kRows, 33, kV);
  std::vector<float> dw_init = test::random_floats(size_t(kV) * kC, 34);
};

struct Result {
  std::vector<float> losses, dx, dw;
};

// The backward's loss scale: float 1 of `words`, or with per_row float 1 + r for row r.
struct Scales {
  std::vector<float> words{0.0f, 1.0f / kRows};
  bool per_row = false;
};

struct Buffers {
  Buffer x, w, targets, losses, dx, dw, scale;
  Buffers(const Problem& p, GradWrite mode, const Scales& sc = {})
      : x(test::upload_buffer(p.x, "x")),
        w(test::upload_buffer(p.w, "w")),
        targets(test::upload_buffer(p.targets, "targets")),
        losses(test::garbage_buffer<float>(kRows, "losses")),
        dx(test::garbage_buffer<float>(size_t(kRows) * kC, "dx")),
        dw(mode == GradWrite::accumulate ? test::upload_buffer(p.dw_init, "dw")
                                         : test::garbage_buffer<float>(size_t(kV) * kC, "dw")),
        scale(test::upload_buffer(sc.words, "scale")) {}
  Result read() const {
    return {test::read<float>(losses, kRows), test::read<float>(dx, size_t(kRows) * kC),
            test::read<float>(dw, size_t(kV) * kC)};
  }
};

// `frozen`: the backward gets no dW buffer (a LoRA-frozen head) and must leave dw as it was.
Result run_chunked(const DeviceQuirks& q, const Problem& p, uint32_t chunk, GradWrite mode,
                   bool frozen = false, const Scales& sc = {}) {
  Buffers b(p, mode, sc);
  Buffer ws = test::garbage_buffer<float>(size_t(chunk) * kV, "logits chunk");
  const kernels::HeadLossShape s{kRows, kC, kV, chunk};
  std::vector<Dispatch> d = kernels::head_loss_forward(
      q, s, b.x.whole(), b.w.whole(), b.targets.whole(), b.losses.whole(), ws.whole());
  for (Dispatch& k :
       kernels::head_loss_backward(q, s, b.x.whole(), b.w.whole(), b.targets.whole(), b.dx.whole(),
                                   frozen ? BufferSlice{} : b.dw.whole(), ws.whole(),
                                   {b.scale.whole(), 1, sc.per_row}, GradWrite::overwrite, mode))
    d.push_back(std::move(k));
  test::run_once(std::move(d));
  return b.read();
}

// Today's unchunked head: whole logits, dlogits in a buffer of their own.
Result run_whole(const DeviceQuirks& q, const Problem& p, GradWrite mode, const Scales& sc = {}) {
  Buffers b(p, mode, sc);
  Buffer logits = test::garbage_buffer<float>(size_t(kRows) * kV, "logits");
  Buffer dlogits = test::garbage_buffer<float>(size_t(kRows) * kV, "dlogits");
  const kernels::MatmulShape m{kRows, kV, kC, kernels::WeightLayout::out_in};
  std::vector<Dispatch> d =
      kernels::matmul_forward_pieces(q, m, b.x.whole(), b.w.whole(), {}, logits.whole());
  d.push_back(kernels::cross_entropy_forward(q, {kRows, kV}, logits.whole(), b.targets.whole(),
                                             b.losses.whole()));
  d.push_back(kernels::cross_entropy_backward(q, {kRows, kV}, logits.whole(), b.targets.whole(),
                                              dlogits.whole(), {b.scale.whole(), 1, sc.per_row}));
  for (auto ds : {kernels::matmul_backward_input_pieces(q, m, dlogits.whole(), b.w.whole(),
                                                        b.dx.whole(), GradWrite::overwrite),
                  kernels::matmul_backward_weight_pieces(q, m, dlogits.whole(), b.x.whole(),
                                                         b.dw.whole(), mode)})
    for (Dispatch& k : ds) d.push_back(std::move(k));
  test::run_once(std::move(d));
  return b.read();
}

std::vector<DeviceQuirks> variants() {
  DeviceQuirks cpu = test::device().plan().quirks, gpu = cpu;
  cpu.barriers_are_expensive = true;
  gpu.barriers_are_expensive = false;
  cpu.texel_fetch_beats_storage_loads = gpu.texel_fetch_beats_storage_loads = false;
  DeviceQuirks texels = cpu, pieces = cpu;
  texels.texel_fetch_beats_storage_loads = true;
  pieces.max_binding_bytes = 40 * kC * 4;  // the weight in pieces of at most 40 rows
  return {cpu, gpu, texels, pieces};
}

void require_within_rounding(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float largest = 0;
  for (float v : b) largest = std::max(largest, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("dw[" << i << "] chunked " << a[i] << " whole " << b[i]);
    REQUIRE(std::abs(a[i] - b[i]) <= 1e-5f * largest);
  }
}

void check_problem(const Problem& p) {
  int variant = 0;
  for (const DeviceQuirks& q : variants()) {
    for (GradWrite mode : {GradWrite::overwrite, GradWrite::accumulate}) {
      INFO("variant " << variant << " dW " << (mode == GradWrite::overwrite ? "=" : "+="));
      const Result whole = run_whole(q, p, mode);
      for (float l : whole.losses) REQUIRE(std::isfinite(l));
      const Result one = run_chunked(q, p, kRows, mode);
      CHECK(one.losses == whole.losses);
      CHECK(one.dx == whole.dx);
      CHECK(one.dw == whole.dw);
      const Result chunked = run_chunked(q, p, 64, mode);
      CHECK(chunked.losses == whole.losses);
      CHECK(chunked.dx == whole.dx);
      require_within_rounding(chunked.dw, whole.dw);
    }
    ++variant;
  }
}

}  // namespace

TEST_CASE("head_loss: chunked losses and dx are the unchunked bits, dW within rounding") {
  check_problem(Problem{});
}

// Each chunk's rows read their own scales (the chunk start's offset into them): a chunk reading
// the first rows' scales would change dx. Rows scaled 0 get no gradient at all, and the others
// are the one-scale gradient times their scale's ratio, within rounding.
TEST_CASE("head_loss: per-row loss scales follow the chunks, the unchunked bits") {
  const Problem p;
  Scales rows;
  rows.per_row = true;
  rows.words = {std::numeric_limits<float>::quiet_NaN()};
  for (uint32_t r = 0; r < kRows; ++r) rows.words.push_back(r % 3 == 0 ? 0.0f : 0.01f * (r + 1));
  const DeviceQuirks q = variants().front();
  const Result whole = run_whole(q, p, GradWrite::overwrite, rows);
  const Result chunked = run_chunked(q, p, 64, GradWrite::overwrite, false, rows);
  REQUIRE(chunked.dx == whole.dx);
  require_within_rounding(chunked.dw, whole.dw);
  const Result one = run_whole(q, p, GradWrite::overwrite);
  for (uint32_t r = 0; r < kRows; ++r) {
    float largest = 0;
    for (uint32_t c = 0; c < kC; ++c) largest = std::max(largest, std::abs(one.dx[r * kC + c]));
    const float ratio = rows.words[1 + r] * kRows;
    for (uint32_t c = 0; c < kC; ++c) {
      INFO("row " << r << " column " << c);
      if (ratio == 0) REQUIRE(whole.dx[r * kC + c] == 0.0f);
      REQUIRE(std::abs(whole.dx[r * kC + c] - ratio * one.dx[r * kC + c]) <=
              1e-5f * ratio * largest);
    }
  }
}

TEST_CASE("head_loss: ignored targets give zero loss and no gradient, a whole chunk included") {
  Problem p;
  for (uint32_t i = 0; i < kRows; ++i)
    if (i % 3 == 0 || i >= 64) p.targets[i] = kIgnoreTarget;
  check_problem(p);
  const Result r = run_chunked(test::device().plan().quirks, p, 64, GradWrite::overwrite);
  for (uint32_t i = 0; i < kRows; ++i) {
    if (p.targets[i] != kIgnoreTarget) continue;
    CHECK(r.losses[i] == 0.0f);
    for (uint32_t c = 0; c < kC; ++c) CHECK(r.dx[size_t(i) * kC + c] == 0.0f);
  }
}

TEST_CASE("head_loss: a frozen weight gets dx only, the same bits, and no dW dispatch") {
  const Problem p;
  int variant = 0;
  for (const DeviceQuirks& q : variants()) {
    INFO("variant " << variant++);
    // dw starts as dw_init (accumulate mode uploads it): a frozen backward must not touch it.
    const Result trained = run_chunked(q, p, 64, GradWrite::accumulate);
    const Result frozen = run_chunked(q, p, 64, GradWrite::accumulate, true);
    CHECK(frozen.losses == trained.losses);
    CHECK(frozen.dx == trained.dx);
    CHECK(frozen.dw == p.dw_init);
    CHECK(frozen.dw != trained.dw);
    // Stand-in handles: the dispatches are only counted, never recorded.
    const auto slice = [](uint64_t handle, uint64_t floats) {
      return BufferSlice{std::bit_cast<VkBuffer>(handle), 0, floats * 4};
    };
    const BufferSlice x = slice(1, kRows * kC), w = slice(2, kV * kC), rows = slice(3, kRows),
                      dx = slice(4, kRows * kC), ws = slice(5, 64 * kV), scale = slice(6, 2);
    const auto count = [&](BufferSlice dw) {
      return kernels::head_loss_backward(q, {kRows, kC, kV, 64}, x, w, rows, dx, dw, ws, {scale, 1},
                                         GradWrite::overwrite, GradWrite::overwrite)
          .size();
    };
    CHECK(count({}) < count(slice(7, kV * kC)));
  }
}

TEST_CASE("head_loss: an empty shape is a logic error") {
  const auto& q = test::device().plan().quirks;
  CHECK_THROWS_AS(kernels::head_loss_forward(q, {kRows, kC, kV, 0}, {}, {}, {}, {}, {}),
                  std::logic_error);
}
