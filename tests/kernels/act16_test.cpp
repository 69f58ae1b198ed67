// The f16 and bf16 variants of the kernels that store activations (shaders/act16.glsl), each
// fed 16-bit inputs, with NaN-filled outputs and odd sizes:
// - exactly: a 16-bit variant computes in fp32 from the widened inputs, so its 16-bit outputs
//   are the fp32 kernel's outputs on the same (widened) inputs, rounded to nearest even by the
//   host (base/half_float.h), and its fp32 outputs (gradients, statistics) are the fp32 kernel's
//   bit for bit;
// - against the double references, fed the same 16-bit inputs, the 16-bit outputs within one
//   unit in the last place of the storage type (the reference is rounded once, the kernel's
//   fp32 result may sit on the other side of a rounding boundary), exactly where the kernel's
//   arithmetic is the reference's in float (residual, dropout).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>

#include "base/half_float.h"
#include "base/ignore_target.h"
#include "runtime/kernels/act_variant.h"
#include "runtime/kernels/attention.h"
#include "runtime/kernels/cross_entropy.h"
#include "runtime/kernels/dropout.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/layernorm.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/residual.h"
#include "runtime/kernels/rmsnorm.h"
#include "runtime/kernels/rope.h"
#include "runtime/kernels/swiglu.h"
#include "tests/kernels/attention_checks.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/kernels/storage16_values.h"
#include "tests/reference/attention.h"
#include "tests/reference/cross_entropy.h"
#include "tests/reference/dropout.h"
#include "tests/reference/embedding.h"
#include "tests/reference/gelu.h"
#include "tests/reference/layernorm.h"
#include "tests/reference/matmul.h"
#include "tests/reference/matmul_backward.h"
#include "tests/reference/residual.h"
#include "tests/reference/rmsnorm.h"
#include "tests/reference/rope.h"
#include "tests/reference/swiglu.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

using test::narrow;
using test::rounded;
using test::widen;

// One operand of a kernel run: an activation (stored as the run's type) or fp32; an output's
// `values` are its initial contents, or empty for a NaN-filled buffer of `count` elements.
struct Io {
  std::vector<float> values;
  bool act = true;
  std::size_t count = 0;
};
using Make = std::function<std::vector<Dispatch>(DType, const std::vector<BufferSlice>& in,
                                                 const std::vector<BufferSlice>& out)>;

Buffer upload(const Io& io, DType t, bool output) {
  const std::size_t n = io.values.empty() ? io.count : io.values.size();
  if (!io.act || t == DType::f32) {
    if (output && io.values.empty()) return test::garbage_buffer<float>(n, "fp32 operand");
    return test::upload_buffer(io.values, "fp32 operand");
  }
  if (output && io.values.empty()) return test::garbage_buffer<uint16_t>(n, "16-bit operand");
  std::vector<uint16_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) bits[i] = narrow(io.values[i], t);
  return test::upload_buffer(bits, "16-bit operand");
}

// Runs the kernel with activations stored as `t`; returns the outputs as floats.
std::vector<std::vector<float>> run(DType t, const std::vector<Io>& in, const std::vector<Io>& out,
                                    const Make& make) {
  std::vector<Buffer> bufs;
  std::vector<BufferSlice> ins, outs;
  for (const Io& io : in) ins.push_back(bufs.emplace_back(upload(io, t, false)).whole());
  for (const Io& io : out) outs.push_back(bufs.emplace_back(upload(io, t, true)).whole());
  test::run_once(make(t, ins, outs));
  std::vector<std::vector<float>> result;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Buffer& b = bufs[in.size() + i];
    const std::size_t n = out[i].values.empty() ? out[i].count : out[i].values.size();
    if (!out[i].act || t == DType::f32) {
      result.push_back(test::read<float>(b, n));
      continue;
    }
    std::vector<float> w;
    for (uint16_t h : test::read<uint16_t>(b, n)) w.push_back(widen(h, t));
    result.push_back(std::move(w));
  }
  return result;
}

// Rounds the activation inputs to `t` in place, runs the `t` variant and the fp32 kernel on the
// same values and requires the exact agreement the header describes; returns the `t` outputs.
std::vector<std::vector<float>> run_checked(DType t, std::vector<Io> in, const std::vector<Io>& out,
                                            const Make& make) {
  for (Io& io : in)
    if (io.act) io.values = rounded(io.values, t);
  const auto sixteen = run(t, in, out, make);
  const auto f32 = run(DType::f32, in, out, make);
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("output " << i << (out[i].act ? " (activation)" : " (fp32)"));
    const std::vector<float> want = out[i].act ? rounded(f32[i], t) : f32[i];
    REQUIRE(test::bit_identical(sixteen[i], want));
  }
  return sixteen;
}

// Within one unit in the last place of `t` of the double reference (a relative 2^-8 for bf16,
// 2^-11 for f16), with `atol` for values near zero.
void require_rounded_close(const std::vector<float>& gpu, const std::vector<double>& ref, DType t,
                           double atol, const char* what) {
  const double ulp = t == DType::bf16 ? 1.0 / 256 : 1.0 / 2048;
  test::require_close(gpu, ref, ulp, atol, what);
}

std::vector<double> dbl(const std::vector<float>& v) {
  return test::to_double(v);
}

const DType kTypes[] = {DType::f16, DType::bf16};
const std::size_t kSizes[] = {1, 13, 3 * 23 * 7};

TEST_CASE("16-bit gelu, residual, dropout and swiglu match fp32 kernels and the references") {
  for (DType t : kTypes)
    for (std::size_t n : kSizes) {
      DYNAMIC_SECTION(dtype_name(t) << " n = " << n) {
        const auto c = uint32_t(n);
        auto x = rounded(test::random_floats(n, 51, -4, 4), t);
        auto y = rounded(test::random_floats(n, 52, -4, 4), t);
        const auto dy = test::random_floats(n, 53);
        const Io xa{x}, ya{y}, grad{dy, false}, fresh{{}, true, n}, fresh32{{}, false, n};
        // The device's own quirks: on CPU drivers the fp32 kernels run through texel views.
        const DeviceQuirks& q = test::device().plan().quirks;

        auto g = run_checked(t, {xa}, {fresh}, [&](DType a, auto& i, auto& o) {
          return std::vector{kernels::gelu_forward(q, c, i[0], o[0], a)};
        });
        std::vector<double> ry, rdx(n);
        ref::gelu_forward(ry, dbl(x));
        require_rounded_close(g[0], ry, t, 1e-7, "gelu y");
        auto gb = run_checked(t, {grad, xa}, {fresh32}, [&](DType a, auto& i, auto& o) {
          return std::vector{kernels::gelu_backward(q, c, i[0], i[1], o[0], false, a)};
        });
        ref::gelu_backward(rdx, dbl(dy), dbl(x), false);
        test::require_close(gb[0], rdx, 1e-5, 1e-6, "gelu dx");

        // The residual sum and dropout's scaling are the reference's float operations: exact.
        auto r = run_checked(t, {xa, ya}, {fresh}, [&](DType a, auto& i, auto& o) {
          return std::vector{kernels::residual_forward(q, c, i[0], i[1], o[0], 0.75f, a)};
        });
        std::vector<float> rr;
        ref::residual_forward(rr, x, y, 0.75f);
        REQUIRE(test::bit_identical(r[0], rounded(rr, t)));
        const ref::DropoutConfig cfg{0.3f, 7, 2, 5};
        auto d = run_checked(t, {xa}, {fresh}, [&](DType a, auto& i, auto& o) {
          return std::vector{
              kernels::dropout_forward(c, cfg.p, {cfg.seed, cfg.step, cfg.op_id}, i[0], o[0], a)};
        });
        std::vector<float> rd;
        ref::dropout_forward(rd, x, cfg);
        REQUIRE(test::bit_identical(d[0], rounded(rd, t)));

        auto s = run_checked(t, {xa, ya}, {fresh}, [&](DType a, auto& i, auto& o) {
          return std::vector{kernels::swiglu_forward(c, i[0], i[1], o[0], a)};
        });
        std::vector<double> rh, rdg(n), rdu(n);
        ref::swiglu_forward(rh, dbl(x), dbl(y));
        require_rounded_close(s[0], rh, t, 1e-7, "swiglu h");
        auto sb =
            run_checked(t, {grad, xa, ya}, {fresh32, fresh32}, [&](DType a, auto& i, auto& o) {
              return std::vector{kernels::swiglu_backward(c, i[0], i[1], i[2], o[0], o[1],
                                                          kernels::GradWrite::overwrite,
                                                          kernels::GradWrite::overwrite, a)};
            });
        ref::swiglu_backward(rdg, rdu, dbl(dy), dbl(x), dbl(y), false, false);
        test::require_close(sb[0], rdg, 1e-5, 1e-6, "swiglu dg");
        test::require_close(sb[1], rdu, 1e-5, 1e-6, "swiglu du");
      }
    }
}

TEST_CASE("16-bit layernorm and rmsnorm match fp32 kernels and the references") {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = true;  // the fp32 run reads texel views, the 16-bit one not
  for (DType t : kTypes)
    for (auto [rows, C] : {std::pair<uint32_t, uint32_t>{1, 7}, {23, 37}}) {
      DYNAMIC_SECTION(dtype_name(t) << " rows " << rows << " C " << C) {
        const std::size_t n = std::size_t(rows) * C;
        auto x = rounded(test::random_floats(n, 61, -3, 3), t);
        const auto w = test::random_floats(C, 62), b = test::random_floats(C, 63);
        const auto dy = test::random_floats(n, 64);
        const Io xa{x}, wf{w, false}, bf{b, false}, dyf{dy, false};
        const Io y{{}, true, n}, row{{}, false, rows}, dx{{}, false, n}, dc{{}, false, C};
        const kernels::LayernormShape ls{rows, C, 1e-5f};
        auto f = run_checked(t, {xa, wf, bf}, {y, row, row}, [&](DType a, auto& i, auto& o) {
          return std::vector{
              kernels::layernorm_forward(q, ls, i[0], i[1], i[2], o[0], o[1], o[2], a)};
        });
        std::vector<double> ry, rm, rr, rdx(n), rdw(C), rdb(C);
        ref::layernorm_forward(ry, rm, rr, dbl(x), dbl(w), dbl(b), rows, C);
        require_rounded_close(f[0], ry, t, 1e-6, "layernorm y");
        const Io mean{f[1], false}, rstd{f[2], false};
        auto g =
            run_checked(t, {dyf, xa, wf, mean, rstd}, {dx, dc, dc}, [&](DType a, auto& i, auto& o) {
              return std::vector{kernels::layernorm_backward(q, ls, i[0], i[1], i[2], i[3], i[4],
                                                             o[0], o[1], o[2], false, false, a)};
            });
        ref::layernorm_backward(rdx, rdw, rdb, dbl(dy), dbl(x), dbl(w), rm, rr, rows, C, false,
                                false);
        test::require_close(g[0], rdx, 1e-4, 1e-5, "layernorm dx");
        test::require_close(g[1], rdw, 1e-4, 1e-5, "layernorm dw");

        const kernels::RmsnormShape rs{rows, C, 1e-6f};
        auto r = run_checked(t, {xa, wf}, {y, row}, [&](DType a, auto& i, auto& o) {
          return std::vector{kernels::rmsnorm_forward(q, rs, i[0], i[1], o[0], o[1], a)};
        });
        std::vector<double> rmy, rmr, rmdx(n), rmdw(C);
        ref::rmsnorm_forward(rmy, rmr, dbl(x), dbl(w), rows, C, 1e-6);
        require_rounded_close(r[0], rmy, t, 1e-6, "rmsnorm y");
        const Io rrstd{r[1], false};
        auto rb = run_checked(t, {dyf, xa, wf, rrstd}, {dx, dc}, [&](DType a, auto& i, auto& o) {
          return std::vector{kernels::rmsnorm_backward(q, rs, i[0], i[1], i[2], i[3], o[0], o[1],
                                                       kernels::GradWrite::overwrite,
                                                       kernels::GradWrite::overwrite, a)};
        });
        ref::rmsnorm_backward(rmdx, rmdw, dbl(dy), dbl(x), dbl(w), rmr, rows, C, false, false);
        test::require_close(rb[0], rmdx, 1e-4, 1e-5, "rmsnorm dx");
      }
    }
}

TEST_CASE("16-bit attention (fused qkv and grouped-query) matches fp32 kernels and references") {
  const DeviceQuirks q = test::attention_variants()[0];
  for (DType t : kTypes) {
    DYNAMIC_SECTION(dtype_name(t)) {
      // GPT-2's fused qkv: B 2, T 23, C 24, 3 heads of 8.
      const kernels::AttentionShape s{2, 23, 24, 3};
      const std::size_t n = 2 * 23 * 24;
      auto qkv = rounded(test::random_floats(3 * n, 71, -2, 2), t);
      const auto dout = test::random_floats(n, 72);
      auto f = run_checked(
          t, {{qkv}}, {{{}, true, n}, {{}, false, 2 * 3 * 23}}, [&](DType a, auto& i, auto& o) {
            return std::vector{kernels::attention_forward(q, s, i[0], o[0], o[1], a)};
          });
      std::vector<double> rout, rlse, rdqkv;
      ref::attention_forward(rout, rlse, dbl(qkv), 2, 23, 24, 3);
      require_rounded_close(f[0], rout, t, 1e-5, "attention out");
      auto b =
          run_checked(t, {{dout, false}, {qkv}, {f[0]}, {f[1], false}}, {{{}, false, 3 * n}},
                      [&](DType a, auto& i, auto& o) {
                        return std::vector{kernels::attention_backward(
                            q, s, i[0], i[1], i[2], i[3], o[0], kernels::GradWrite::overwrite, a)};
                      });
      // The backward reads the stored (rounded) out: the reference's dqkv is close, not exact.
      ref::attention_backward(rdqkv, dbl(dout), dbl(qkv), 2, 23, 24, 3);
      test::require_close(b[0], rdqkv, t == DType::bf16 ? 3e-2 : 4e-3, 3e-3, "attention dqkv");

      // Llama's layout: 4 query heads of 8 over 2 key/value heads.
      const kernels::AttentionShape g{1, 19, 32, 4, 2};
      auto qs = rounded(test::random_floats(19 * 32, 73, -2, 2), t);
      auto ks = rounded(test::random_floats(19 * 16, 74, -2, 2), t);
      auto vs = rounded(test::random_floats(19 * 16, 75, -2, 2), t);
      auto gf = run_checked(t, {{qs}, {ks}, {vs}}, {{{}, true, 19 * 32}, {{}, false, 4 * 19}},
                            [&](DType a, auto& i, auto& o) {
                              return std::vector{kernels::gqa_attention_forward(
                                  q, g, i[0], i[1], i[2], o[0], o[1], a)};
                            });
      std::vector<double> gout, glse;
      ref::gqa_attention_forward(gout, glse, dbl(qs), dbl(ks), dbl(vs), {1, 19, 4, 2, 8});
      require_rounded_close(gf[0], gout, t, 1e-5, "gqa out");
      const auto gdout = test::random_floats(19 * 32, 76);
      run_checked(t, {{gdout, false}, {qs}, {ks}, {vs}, {gf[0]}, {gf[1], false}},
                  {{{}, false, 19 * 32}, {{}, false, 19 * 16}, {{}, false, 19 * 16}},
                  [&](DType a, auto& i, auto& o) {
                    return std::vector{kernels::gqa_attention_backward(
                        q, g, i[0], i[1], i[2], i[3], i[4], i[5], o[0], o[1], o[2],
                        kernels::GradWrite::overwrite, a)};
                  });

      // Gemma 3's local layers: a sliding window of 5 keys and a score scale of their own.
      const kernels::AttentionShape w{1, 19, 32, 4, 2, 5, 0.3f};
      auto wf = run_checked(t, {{qs}, {ks}, {vs}}, {{{}, true, 19 * 32}, {{}, false, 4 * 19}},
                            [&](DType a, auto& i, auto& o) {
                              return std::vector{kernels::gqa_attention_forward(
                                  q, w, i[0], i[1], i[2], o[0], o[1], a)};
                            });
      ref::gqa_attention_forward(gout, glse, dbl(qs), dbl(ks), dbl(vs),
                                 {1, 19, 4, 2, 8, 5, double(0.3f)});
      require_rounded_close(wf[0], gout, t, 1e-5, "windowed gqa out");
      run_checked(t, {{gdout, false}, {qs}, {ks}, {vs}, {wf[0]}, {wf[1], false}},
                  {{{}, false, 19 * 32}, {{}, false, 19 * 16}, {{}, false, 19 * 16}},
                  [&](DType a, auto& i, auto& o) {
                    return std::vector{kernels::gqa_attention_backward(
                        q, w, i[0], i[1], i[2], i[3], i[4], i[5], o[0], o[1], o[2],
                        kernels::GradWrite::overwrite, a)};
                  });
    }
  }
}

TEST_CASE("16-bit cross-entropy and rope match fp32 kernels and the references") {
  const DeviceQuirks q = test::device().plan().quirks;
  for (DType t : kTypes) {
    DYNAMIC_SECTION(dtype_name(t)) {
      const uint32_t rows = 5, V = 37;
      auto logits = rounded(test::random_floats(rows * V, 81, -6, 6), t);
      const std::vector<uint32_t> targets{3, 36, kIgnoreTarget, 0, 17};
      std::vector<float> targets_bits(rows);
      std::memcpy(targets_bits.data(), targets.data(), rows * 4);
      const std::vector<float> scale{0.25f};
      const Io lo{logits}, tg{targets_bits, false}, sc{scale, false};
      auto f = run_checked(t, {lo, tg}, {{{}, false, rows}}, [&](DType a, auto& i, auto& o) {
        return std::vector{kernels::cross_entropy_forward(q, {rows, V}, i[0], i[1], o[0], a)};
      });
      std::vector<double> rl, rdl;
      ref::cross_entropy_forward(rl, dbl(logits), targets, rows, V);
      test::require_close(f[0], rl, 1e-5, 1e-6, "losses");
      auto b =
          run_checked(t, {lo, tg, sc}, {{{}, false, rows * V}}, [&](DType a, auto& i, auto& o) {
            return std::vector{
                kernels::cross_entropy_backward(q, {rows, V}, i[0], i[1], o[0], {i[2], 0}, a)};
          });
      ref::cross_entropy_backward(rdl, dbl(logits), targets, rows, V, 0.25);
      test::require_close(b[0], rdl, 1e-5, 1e-7, "dlogits");

      const kernels::RopeShape rs{2, 7, 3, 10, 10000.0f};
      auto x = rounded(test::random_floats(2 * 7 * 30, 82, -2, 2), t);
      auto r = run_checked(t, {{x}}, {{{}, true, x.size()}}, [&](DType a, auto& i, auto& o) {
        return std::vector{kernels::rope_forward(rs, i[0], {}, o[0], {}, a)};
      });
      std::vector<double> ry;
      ref::rope_forward(ry, dbl(x), {2, 7, 3, 10, 10000.0f});
      require_rounded_close(r[0], ry, t, 1e-6, "rope y");
    }
  }
}

// The matmul variants each device kind runs: GPU storage kernels, CPU storage kernels (vec4
// where the layout allows) and CPU texel views.
std::vector<DeviceQuirks> matmul_variants() {
  DeviceQuirks gpu = test::device().plan().quirks, cpu = gpu, texels = gpu;
  gpu.barriers_are_expensive = false;
  gpu.texel_fetch_beats_storage_loads = cpu.texel_fetch_beats_storage_loads = false;
  cpu.barriers_are_expensive = texels.barriers_are_expensive = true;
  texels.texel_fetch_beats_storage_loads = true;
  return {gpu, cpu, texels};
}

TEST_CASE("16-bit matmuls (x and y, x alone, dW from x) match fp32 kernels and the reference") {
  using kernels::WeightLayout;
  const auto variants = matmul_variants();
  for (DType t : kTypes)
    for (std::size_t v = 0; v < variants.size(); ++v)
      for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in})
        for (auto [M, N, K] : {std::array<uint32_t, 3>{23, 36, 20}, {7, 13, 9}}) {
          DYNAMIC_SECTION(dtype_name(t) << " variant " << v << " layout " << int(layout) << " " << M
                                        << "x" << N << "x" << K) {
            const DeviceQuirks& q = variants[v];
            kernels::MatmulShape ms;
            ms.M = M, ms.N = N, ms.K = K, ms.layout = layout;
            auto x = rounded(test::random_floats(std::size_t(M) * K, 91), t);
            const auto w = test::random_floats(std::size_t(K) * N, 92);
            const auto bias = test::random_floats(N, 93);
            const auto dy = test::random_floats(std::size_t(M) * N, 94);
            const ref::WeightLayout rl = layout == WeightLayout::in_out ? ref::WeightLayout::in_out
                                                                        : ref::WeightLayout::out_in;
            std::vector<double> ry, rdx, rdw, rdb;
            ref::matmul_forward(ry, dbl(x), dbl(w), dbl(bias), M, N, K, rl);
            ref::matmul_backward(rdx, rdw, rdb, dbl(dy), dbl(x), dbl(w), M, N, K, rl);
            for (bool y16 : {true, false}) {
              auto y = run_checked(
                  t, {{x}, {w, false}, {bias, false}}, {{{}, y16, ry.size()}},
                  [&](DType a, auto& i, auto& o) {
                    kernels::MatmulShape m = ms;
                    m.x_dtype = a;
                    m.y_dtype = y16 ? a : DType::f32;
                    return std::vector{kernels::matmul_forward(q, m, i[0], i[1], i[2], o[0])};
                  });
              if (y16)
                require_rounded_close(y[0], ry, t, 1e-5, "y");
              else
                test::require_close(y[0], ry, 1e-5, 1e-5, "y (f32)");
            }
            auto g = run_checked(t, {{dy, false}, {x}}, {{{}, false, rdw.size()}},
                                 [&](DType a, auto& i, auto& o) {
                                   kernels::MatmulShape m = ms;
                                   m.x_dtype = a;
                                   return std::vector{kernels::matmul_backward_weight(
                                       q, m, i[0], i[1], o[0], kernels::GradWrite::overwrite)};
                                 });
            test::require_close(g[0], rdw, 1e-5, 1e-5, "dW");
          }
        }
}

TEST_CASE("16-bit embedding output and in-place rounding match the host's rounding") {
  for (DType t : kTypes) {
    DYNAMIC_SECTION(dtype_name(t)) {
      const uint32_t B = 2, T = 7, C = 12, V = 19;
      const auto wte = test::random_floats(V * C, 95), wpe = test::random_floats(T * C, 96);
      std::vector<uint32_t> tokens{0, 18, 3, 3, 7, 1, 2, 9, 11, 5, 18, 4, 0, 6};
      std::vector<float> token_bits(tokens.size());
      std::memcpy(token_bits.data(), tokens.data(), tokens.size() * 4);
      kernels::EmbeddingShape es{B, T, C, V, T};
      auto x = run_checked(t, {{token_bits, false}, {wte, false}, {wpe, false}},
                           {{{}, true, std::size_t(B) * T * C}}, [&](DType a, auto& i, auto& o) {
                             kernels::EmbeddingShape e = es;
                             e.x_dtype = a;
                             return kernels::embedding_forward(test::device().plan().quirks, e,
                                                               i[0], i[1], i[2], o[0]);
                           });
      std::vector<float> rx;
      ref::embedding_forward(rx, tokens, wte, wpe, B, T, C);  // one float sum: exact
      REQUIRE(test::bit_identical(x[0], rounded(rx, t)));

      const auto v = test::random_floats(1001, 97, -70000, 70000);
      Buffer b = test::upload_buffer(v, "values");
      test::run_once({kernels::round_to_act(1001, b.whole(), t)});
      REQUIRE(test::bit_identical(test::read<float>(b, 1001), rounded(v, t)));
    }
  }
}

TEST_CASE("activation kernels pick their variant by dtype, and u32 is refused") {
  using kernels::act_variant;
  const kernels::ActVariants v{KernelId::gelu_forward, KernelId::gelu_forward_f16,
                               KernelId::gelu_forward_bf16};
  CHECK(act_variant(DType::f32, v) == KernelId::gelu_forward);
  CHECK(act_variant(DType::f16, v) == KernelId::gelu_forward_f16);
  CHECK(act_variant(DType::bf16, v) == KernelId::gelu_forward_bf16);
  CHECK_THROWS_AS(act_variant(DType::u32, v), std::invalid_argument);
  DeviceQuirks texels = test::device().plan().quirks;
  texels.texel_fetch_beats_storage_loads = true;
  const kernels::LayernormShape ls{4, 8, 1e-5f};
  CHECK(kernels::layernorm_forward(texels, ls, {}, {}, {}, {}, {}, {}).kernel ==
        KernelId::layernorm_forward_texels);
  CHECK(kernels::layernorm_forward(texels, ls, {}, {}, {}, {}, {}, {}, DType::bf16).kernel ==
        KernelId::layernorm_forward_bf16);
  // The texel-view forms of GELU, the residual and cross-entropy read fp32 alone.
  const BufferSlice s{VK_NULL_HANDLE, 0, 64 * sizeof(float)};
  CHECK(kernels::gelu_forward(texels, 64, s, s).kernel == KernelId::gelu_forward_texels);
  CHECK(kernels::gelu_forward(texels, 64, s, s, DType::bf16).kernel == KernelId::gelu_forward_bf16);
  CHECK(kernels::residual_forward(texels, 64, s, s, s).kernel == KernelId::residual_forward_texels);
  CHECK(kernels::residual_forward(texels, 64, s, s, s, 1.0f, DType::f16).kernel ==
        KernelId::residual_forward_f16);
  const kernels::CrossEntropyShape ce{2, 32};
  CHECK(kernels::cross_entropy_forward(texels, ce, s, s, s).kernel ==
        KernelId::cross_entropy_forward_texels);
  CHECK(kernels::cross_entropy_forward(texels, ce, s, s, s, DType::f16).kernel ==
        KernelId::cross_entropy_forward_f16);
}

}  // namespace
