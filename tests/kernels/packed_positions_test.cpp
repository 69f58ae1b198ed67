// Packed rows' positions (base/row_positions.h) in the kernels that read them besides attention:
// RoPE rotates each token by its position in its example, and GPT-2's embedding adds (and its
// backward sums into) the learned position row of that position. Each example of a packed row
// gets exactly the bits the plain kernels give it alone in a row.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "runtime/kernels/embedding.h"
#include "runtime/kernels/rope.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// One row of 19 positions: examples of 7, 1 and 8 tokens, then 3 of padding.
const std::vector<uint32_t> kPositions = {0, 1, 2, 3, 4, 5, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2};
struct Segment {
  std::size_t start, length;
};
const Segment kSegments[] = {{0, 7}, {7, 1}, {8, 8}, {16, 3}};

std::vector<float> slice(const std::vector<float>& x, std::size_t width, const Segment& s) {
  return {x.begin() + std::ptrdiff_t(s.start * width),
          x.begin() + std::ptrdiff_t((s.start + s.length) * width)};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// rope forward (or backward, overwriting) of [1, T, H, D] x, positions given or plain.
std::vector<float> gpu_rope(bool backward, const std::vector<float>& x, uint32_t T, uint32_t H,
                            uint32_t D, const std::vector<uint32_t>* positions) {
  const kernels::RopeShape s{1, T, H, D, 10000.0f};
  Buffer in = test::upload_buffer(x, "x");
  Buffer out = test::garbage_buffer<float>(x.size(), "y");
  Buffer pos = test::upload_buffer(positions ? *positions : std::vector<uint32_t>{0}, "pos");
  const BufferSlice p = positions ? pos.whole() : BufferSlice{};
  test::run_once({backward
                      ? kernels::rope_backward(s, in.whole(), {}, out.whole(), {},
                                               kernels::GradWrite::overwrite, p)
                      : kernels::rope_forward(s, in.whole(), {}, out.whole(), {}, DType::f32, p)});
  return test::read<float>(out, x.size());
}

}  // namespace

TEST_CASE("packed rope turns each example's tokens from position 0, as alone in a row") {
  const uint32_t T = uint32_t(kPositions.size()), H = 3, D = 8, width = H * D;
  const std::vector<float> x = test::random_floats(std::size_t(T) * width, 5);
  for (bool backward : {false, true}) {
    INFO("backward " << backward);
    const std::vector<float> packed = gpu_rope(backward, x, T, H, D, &kPositions);
    for (const Segment& seg : kSegments) {
      const std::vector<float> alone =
          gpu_rope(backward, slice(x, width, seg), uint32_t(seg.length), H, D, nullptr);
      REQUIRE(same_bits(slice(packed, width, seg), alone));
    }
    // Without restarting (the row's positions), the later examples would turn otherwise.
    const std::vector<float> plain = gpu_rope(backward, x, T, H, D, nullptr);
    REQUIRE_FALSE(same_bits(slice(packed, width, kSegments[2]), slice(plain, width, kSegments[2])));
  }
}

TEST_CASE("packed embedding adds and sums the position row of each token's own position") {
  const uint32_t T = uint32_t(kPositions.size()), C = 12, V = 29, ctx = 24;
  const std::vector<uint32_t> tokens = test::random_indices(T, 7, V);
  const std::vector<float> wte = test::random_floats(std::size_t(V) * C, 8),
                           wpe = test::random_floats(std::size_t(ctx) * C, 9),
                           dx = test::random_floats(std::size_t(T) * C, 10);
  const kernels::EmbeddingShape s{1, T, C, V, ctx};
  const auto& q = test::device().plan().quirks;
  Buffer tok = test::upload_buffer(tokens, "tokens"), pos = test::upload_buffer(kPositions, "pos");
  Buffer wte_b = test::upload_buffer(wte, "wte"), wpe_b = test::upload_buffer(wpe, "wpe");
  Buffer dx_b = test::upload_buffer(dx, "dx");
  Buffer x = test::garbage_buffer<float>(std::size_t(T) * C, "x");
  Buffer dwte = test::garbage_buffer<float>(wte.size(), "dwte");
  Buffer dwpe = test::garbage_buffer<float>(wpe.size(), "dwpe");
  std::vector<Dispatch> ds = kernels::embedding_forward(q, s, tok.whole(), wte_b.whole(),
                                                        wpe_b.whole(), x.whole(), pos.whole());
  for (Dispatch& d : kernels::embedding_backward(q, s, tok.whole(), dx_b.whole(), dwte.whole(),
                                                 dwpe.whole(), false, false, pos.whole()))
    ds.push_back(std::move(d));
  test::run_once(std::move(ds));
  const std::vector<float> got_x = test::read<float>(x, std::size_t(T) * C);
  const std::vector<float> got_dwpe = test::read<float>(dwpe, wpe.size());
  // x[t] = wte[token] + wpe[position]; dwpe[p] sums dx over the tokens at p in row order.
  std::vector<float> want_dwpe(wpe.size(), 0.0f);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c) {
      REQUIRE(got_x[t * C + c] == wte[tokens[t] * C + c] + wpe[kPositions[t] * C + c]);
      want_dwpe[kPositions[t] * C + c] += dx[t * C + c];
    }
  REQUIRE(same_bits(got_dwpe, want_dwpe));
}
