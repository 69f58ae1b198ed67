// The texel-fetch matmul variants (matmul_outer_texels.comp, matmul_dot_texels.comp) against
// the storage-buffer kernels they replace on CPU drivers: the same bits for every weight layout,
// every X fetch mode, accumulate modes and a piece of a wider matrix; and against a double
// reference. They run on every device (the quirk is forced on), not only where they are picked.
#include <catch2/catch.hpp>

#include <functional>

#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_texels.h"
#include "runtime/kernels/residual.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/matmul.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::WeightLayout;

namespace {

DeviceQuirks with_texels(bool on) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = true;
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

struct Operands {
  std::vector<float> a, b, c0;  // the two inputs and C's contents before the dispatch
};

// Runs `make` (which builds one dispatch from three buffers) and returns C afterwards.
std::vector<float> run(const Operands& o,
                       const std::function<Dispatch(BufferSlice, BufferSlice, BufferSlice)>& make) {
  Buffer a = test::upload_buffer(o.a, "a");
  Buffer b = test::upload_buffer(o.b, "b");
  Buffer c = test::upload_buffer(o.c0, "c");
  test::run_once({make(a.whole(), b.whole(), c.whole())});
  return test::read<float>(c, o.c0.size());
}

Operands operands(std::size_t a, std::size_t b, std::size_t c, uint32_t seed) {
  return {test::random_floats(a, seed), test::random_floats(b, seed + 1),
          test::random_floats(c, seed + 2)};
}

// dinp/dW reference in double: sum over the third index of the given element products.
std::vector<double> ref_matmul(uint32_t I, uint32_t J, uint32_t R,
                               const std::function<double(uint32_t, uint32_t)>& x,
                               const std::function<double(uint32_t, uint32_t)>& y) {
  std::vector<double> c(size_t(I) * J, 0.0);
  for (uint32_t i = 0; i < I; ++i)
    for (uint32_t j = 0; j < J; ++j)
      for (uint32_t r = 0; r < R; ++r) c[size_t(i) * J + j] += x(i, r) * y(r, j);
  return c;
}

using Make = std::function<Dispatch(BufferSlice, BufferSlice, BufferSlice)>;

// The texel dispatch and the storage-buffer one on the same operands: the same bits, and close to
// `ref` (plus C's old contents when accumulating).
void require_same_bits_and_close(const Operands& o, const Make& texel, const Make& storage,
                                 std::vector<double> ref, bool accumulate, double atol,
                                 const char* what) {
  const auto got = run(o, texel);
  REQUIRE(test::bit_identical(got, run(o, storage)));
  if (accumulate)
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += o.c0[i];
  test::require_close(got, ref, 1e-5, atol, what);
}

const char* name(WeightLayout l) {
  return l == WeightLayout::in_out ? "in_out" : "out_in";
}

}  // namespace

TEST_CASE("texel matmul forward gives the storage kernels' bits") {
  struct Case {
    uint32_t M, N, K;
  };
  // K % 4 != 0 reads X one element at a time; 69 and 101 leave partial tiles.
  for (Case c : {Case{69, 144, 48}, Case{69, 104, 50}, Case{8, 4, 4}, Case{257, 96, 64},
                 Case{1, 4, 4}, Case{7, 8, 12}, Case{33, 36, 33}, Case{129, 132, 128}}) {
    for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in}) {
      for (bool bias : {false, true}) {
        DYNAMIC_SECTION(c.M << "x" << c.N << "x" << c.K << " " << name(layout) << " bias "
                            << bias) {
          const kernels::MatmulShape s{c.M, c.N, c.K, layout};
          Operands o = operands(size_t(c.M) * c.K, size_t(c.K) * c.N, size_t(c.M) * c.N, c.M + c.K);
          const auto b = test::random_floats(c.N, 9);
          Buffer d_bias = test::upload_buffer(b, "bias");
          BufferSlice bs = bias ? d_bias.whole() : BufferSlice{};
          auto texel = kernels::matmul_forward_texels(with_texels(true), s, {}, {}, {}, {});
          const bool expected = layout == WeightLayout::out_in ? c.K % 4 == 0 : c.N % 4 == 0;
          REQUIRE(texel.has_value() == expected);
          if (!expected) continue;
          const auto got = run(o, [&](BufferSlice a, BufferSlice w, BufferSlice out) {
            return *kernels::matmul_forward_texels(with_texels(true), s, a, w, bs, out);
          });
          const auto want = run(o, [&](BufferSlice a, BufferSlice w, BufferSlice out) {
            return kernels::matmul_forward(with_texels(false), s, a, w, bs, out);
          });
          REQUIRE(test::bit_identical(got, want));
          std::vector<float> expect;
          ref::matmul_forward(expect, o.a, o.b, bias ? b : std::vector<float>{}, c.M, c.N, c.K,
                              layout == WeightLayout::in_out ? ref::WeightLayout::in_out
                                                             : ref::WeightLayout::out_in);
          test::require_close(got, test::to_double(expect), 1e-5, 1e-5 * c.K, "texel forward");
        }
      }
    }
  }
}

TEST_CASE("texel matmul backward gives the storage kernels' bits") {
  struct Case {
    uint32_t M, N, K;
  };
  // N % 4 != 0 (the tied head's vocabulary): dout is read as shifted vec4 texels when M * N is a
  // multiple of 4 (68 x 101, 12 x 7; X_MODE 3 and 4), else one float at a time (69 x 101).
  for (Case c :
       {Case{69, 144, 48}, Case{69, 101, 48}, Case{68, 101, 48}, Case{12, 7, 8}, Case{12, 8, 4},
        Case{130, 64, 96}, Case{1, 4, 4}, Case{7, 8, 12}, Case{33, 36, 32}, Case{129, 132, 128}}) {
    for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in}) {
      for (uint32_t acc : {0u, 1u}) {
        DYNAMIC_SECTION(c.M << "x" << c.N << "x" << c.K << " " << name(layout) << " accumulate "
                            << acc) {
          const kernels::MatmulShape s{c.M, c.N, c.K, layout};
          const auto mode = static_cast<kernels::GradWrite>(acc);
          // dinp: a = dout [M,N], b = W, c = dinp [M,K].
          Operands oi =
              operands(size_t(c.M) * c.N, size_t(c.K) * c.N, size_t(c.M) * c.K, c.M + 3 * acc);
          const bool input_ok = layout == WeightLayout::in_out ? c.N % 4 == 0 : c.K % 4 == 0;
          REQUIRE(kernels::matmul_backward_input_texels(with_texels(true), s, {}, {}, {}, acc)
                      .has_value() == input_ok);
          if (input_ok) {
            auto dout = [&](uint32_t m, uint32_t n) { return double(oi.a[size_t(m) * c.N + n]); };
            auto w = [&](uint32_t n, uint32_t k) {
              return layout == WeightLayout::in_out ? oi.b[size_t(k) * c.N + n]
                                                    : oi.b[size_t(n) * c.K + k];
            };
            require_same_bits_and_close(
                oi,
                [&](BufferSlice d, BufferSlice wt, BufferSlice dinp) {
                  return *kernels::matmul_backward_input_texels(with_texels(true), s, d, wt, dinp,
                                                                acc);
                },
                [&](BufferSlice d, BufferSlice wt, BufferSlice dinp) {
                  return kernels::matmul_backward_input(with_texels(false), s, d, wt, dinp, mode);
                },
                ref_matmul(c.M, c.K, c.N, dout, w), acc, 1e-5 * c.N, "texel dinp");
          }
          // dW: a = dout [M,N], b = inp [M,K], c = dW in W's layout.
          Operands ow =
              operands(size_t(c.M) * c.N, size_t(c.M) * c.K, size_t(c.K) * c.N, c.N + 5 * acc);
          const bool weight_ok = layout == WeightLayout::in_out ? c.N % 4 == 0 : c.K % 4 == 0;
          REQUIRE(kernels::matmul_backward_weight_texels(with_texels(true), s, {}, {}, {}, acc)
                      .has_value() == weight_ok);
          if (weight_ok) {
            auto dout = [&](uint32_t m, uint32_t n) { return double(ow.a[size_t(m) * c.N + n]); };
            auto inp = [&](uint32_t m, uint32_t k) { return double(ow.b[size_t(m) * c.K + k]); };
            auto ref =
                layout == WeightLayout::in_out
                    ? ref_matmul(
                          c.K, c.N, c.M, [&](uint32_t k, uint32_t m) { return inp(m, k); }, dout)
                    : ref_matmul(
                          c.N, c.K, c.M, [&](uint32_t n, uint32_t m) { return dout(m, n); }, inp);
            require_same_bits_and_close(
                ow,
                [&](BufferSlice d, BufferSlice x, BufferSlice dw) {
                  return *kernels::matmul_backward_weight_texels(with_texels(true), s, d, x, dw,
                                                                 acc);
                },
                [&](BufferSlice d, BufferSlice x, BufferSlice dw) {
                  return kernels::matmul_backward_weight(with_texels(false), s, d, x, dw, mode);
                },
                std::move(ref), acc, 1e-5 * c.M, "texel dW");
          }
        }
      }
    }
  }
}

TEST_CASE("an odd-width dout is read as shifted vec4 texels where its binding allows") {
  Buffer even = test::garbage_buffer<float>(68 * 101, "dout 68x101");  // 27472 bytes: 1717 texels
  Buffer odd = test::garbage_buffer<float>(69 * 101, "dout 69x101");   // not whole texels
  Buffer any = test::garbage_buffer<float>(101 * 48, "w");
  auto modes = [&](uint32_t M, const Buffer& dout) {
    const kernels::MatmulShape s{M, 101, 48, WeightLayout::out_in};
    const auto in = kernels::matmul_backward_input_texels(with_texels(true), s, dout.whole(),
                                                          any.whole(), any.whole(), 0);
    const auto w = kernels::matmul_backward_weight_texels(with_texels(true), s, dout.whole(),
                                                          any.whole(), any.whole(), 0);
    REQUIRE((in && w));
    return std::pair{in->spec.at(5), w->spec.at(5)};
  };
  CHECK(modes(68, even) == std::pair{3u, 4u});  // shifted along r (dinp), along i (dW)
  CHECK(modes(69, odd) == std::pair{2u, 2u});   // one float at a time
}

TEST_CASE("texel matmuls are not picked without the quirk") {
  const kernels::MatmulShape s{8, 8, 8, WeightLayout::in_out};
  CHECK_FALSE(kernels::matmul_forward_texels(with_texels(false), s, {}, {}, {}, {}).has_value());
  CHECK_FALSE(
      kernels::matmul_backward_input_texels(with_texels(false), s, {}, {}, {}, 0).has_value());
  CHECK_FALSE(
      kernels::matmul_backward_weight_texels(with_texels(false), s, {}, {}, {}, 0).has_value());
  CHECK(kernels::matmul_forward_texels(with_texels(true), s, {}, {}, {}, {}).has_value());
}

// Hidden by default (a benchmark, not a test): `remat_matmul_texels_test "[.bench]"`. Each
// matmul of a GPT-2-small block and of the tied head (vocabulary cut to 8191, odd like 50257),
// storage-buffer kernels against texel kernels.
TEST_CASE("texel matmul throughput at GPT-2-small shapes", "[.bench]") {
  enum class Kind { forward, input, weight };
  struct Case {
    const char* what;
    Kind kind;
    uint32_t M, N, K;
    WeightLayout layout;
  };
  const WeightLayout io = WeightLayout::in_out, oi = WeightLayout::out_in;
  for (Case c : {Case{"c_fc fwd", Kind::forward, 256, 3072, 768, io},
                 Case{"mlp c_proj fwd", Kind::forward, 256, 768, 3072, io},
                 Case{"c_fc dinp", Kind::input, 256, 3072, 768, io},
                 Case{"c_fc dW", Kind::weight, 256, 3072, 768, io},
                 Case{"head fwd", Kind::forward, 256, 8191, 768, oi},
                 Case{"head dinp", Kind::input, 256, 8191, 768, oi},
                 Case{"head dW", Kind::weight, 256, 8191, 768, oi}}) {
    const kernels::MatmulShape s{c.M, c.N, c.K, c.layout};
    const std::size_t in = size_t(c.M) * c.K, w = size_t(c.N) * c.K, out = size_t(c.M) * c.N;
    Operands o = c.kind == Kind::forward ? operands(in, w, out, 1)
                 : c.kind == Kind::input ? operands(out, w, in, 1)
                                         : operands(out, in, w, 1);
    Buffer a = test::upload_buffer(o.a, "a"), b = test::upload_buffer(o.b, "b"),
           d = test::upload_buffer(o.c0, "c");
    for (bool texel : {false, true}) {
      const DeviceQuirks q = with_texels(texel);
      const Dispatch dispatch =
          c.kind == Kind::forward
              ? kernels::matmul_forward(q, s, a.whole(), b.whole(), {}, d.whole())
          : c.kind == Kind::input
              ? kernels::matmul_backward_input(q, s, a.whole(), b.whole(), d.whole(),
                                               kernels::GradWrite::overwrite)
              : kernels::matmul_backward_weight(q, s, a.whole(), b.whole(), d.whole(),
                                                kernels::GradWrite::overwrite);
      Executor ex(test::kernels(), {dispatch}, ExecutorOptions{true});
      ex.run();
      double best = 1e30;
      for (int i = 0; i < 3; ++i) {
        ex.run();
        best = std::min(best, ex.dispatch_ms()[0]);
      }
      std::printf("%-15s %-22s %8.2f ms %6.2f GFLOP/s\n", c.what,
                  kernel_name(dispatch.kernel).data(), best,
                  2.0 * c.M * c.N * c.K / (best * 1e-3) / 1e9);
      CHECK(best > 0.0);
    }
  }
}

TEST_CASE("a residual fused into the texel matmul gives the matmul then residual_forward's bits") {
  const DeviceQuirks q = with_texels(true);
  struct Case {
    uint32_t M, N, K;
  };
  for (Case c : {Case{69, 144, 48}, Case{8, 4, 4}, Case{257, 96, 64}}) {
    DYNAMIC_SECTION(c.M << "x" << c.N << "x" << c.K) {
      const kernels::MatmulShape s{c.M, c.N, c.K, WeightLayout::in_out};
      const std::size_t out = std::size_t(c.M) * c.N;
      Buffer x = test::upload_buffer(test::random_floats(std::size_t(c.M) * c.K, 31), "x");
      Buffer w = test::upload_buffer(test::random_floats(std::size_t(c.K) * c.N, 32), "w");
      Buffer b = test::upload_buffer(test::random_floats(c.N, 33), "bias");
      Buffer r = test::upload_buffer(test::random_floats(out, 34), "residual");
      Buffer fused = test::garbage_buffer<float>(out, "fused"),
             apart = test::garbage_buffer<float>(out, "apart");
      const auto one = kernels::matmul_forward_pieces(q, s, x.whole(), w.whole(), b.whole(),
                                                      fused.whole(), r.whole());
      REQUIRE(one.size() == 1);  // the residual is added before the store
      REQUIRE(one[0].kernel == KernelId::matmul_outer_texels);
      test::run_once(one);
      test::run_once({kernels::matmul_forward(q, s, x.whole(), w.whole(), b.whole(), apart.whole()),
                      kernels::residual_forward(q, c.M * c.N, r.whole(), apart.whole(),
                                                apart.whole(), 1.0f, DType::f32)});
      REQUIRE(test::bit_identical(test::read<float>(fused, out), test::read<float>(apart, out)));
      // The out_in layout (the dot kernel) adds it in place, after the matmul, with the same bits.
      const kernels::MatmulShape t{c.M, c.N, c.K, WeightLayout::out_in};
      const auto two = kernels::matmul_forward_pieces(q, t, x.whole(), w.whole(), b.whole(),
                                                      fused.whole(), r.whole());
      REQUIRE(two.size() == 2);
      test::run_once(two);
      test::run_once({kernels::matmul_forward(q, t, x.whole(), w.whole(), b.whole(), apart.whole()),
                      kernels::residual_forward(q, c.M * c.N, r.whole(), apart.whole(),
                                                apart.whole(), 1.0f, DType::f32)});
      REQUIRE(test::bit_identical(test::read<float>(fused, out), test::read<float>(apart, out)));
    }
  }
}
