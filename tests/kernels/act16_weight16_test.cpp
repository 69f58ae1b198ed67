// Kernels that read a frozen weight stored in f16/bf16 (--weights-dtype) and an activation
// stored in f16/bf16 (--act-dtype) at once: the matmul forward (storage scalar, storage vec4,
// texel outer and dot; the result an activation or the chunked head's fp32 logits), the backward
// input (dx fp32), the embedding (16-bit tables, 16-bit x) and the chunked head. Each widens in
// registers and computes in fp32, so it gives exactly the bits of the fp32 kernel run on the
// widened operands, rounded to the activation type where the result is stored in 16 bits.
// Outputs start as NaN, so a missed element fails.
#include <catch2/catch.hpp>

#include <cstring>

#include "base/half_float.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/head_loss.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/kernels/storage16_values.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::WeightLayout;

namespace {

const DType kTypes[] = {DType::f16, DType::bf16};

using test::narrow;
using test::rounded;
using test::widen;

// Values stored as `t` (their 16-bit patterns, or the floats for f32).
Buffer upload_as(const std::vector<float>& v, DType t) {
  if (t == DType::f32) return test::upload_buffer(v, "f32 operand");
  std::vector<uint16_t> bits;
  for (float x : v) bits.push_back(narrow(x, t));
  return test::upload_buffer(bits, "16-bit operand");
}
// A NaN-filled output of `n` elements stored as `t`.
Buffer garbage_as(std::size_t n, DType t) {
  return t == DType::f32 ? test::garbage_buffer<float>(n, "f32 output")
                         : test::garbage_buffer<uint16_t>(n, "16-bit output");
}
std::vector<float> read_as(const Buffer& b, std::size_t n, DType t) {
  if (t == DType::f32) return test::read<float>(b, n);
  std::vector<float> v;
  for (uint16_t h : test::read<uint16_t>(b, n)) v.push_back(widen(h, t));
  return v;
}

// Storage buffers one float at a time (GPUs), vec4 storage loads (CPU drivers without texel
// views) and texel views (llvmpipe).
std::vector<DeviceQuirks> paths() {
  DeviceQuirks scalar = test::device().plan().quirks, vec4 = scalar, texels = scalar;
  scalar.barriers_are_expensive = false;
  scalar.texel_fetch_beats_storage_loads = vec4.texel_fetch_beats_storage_loads = false;
  vec4.barriers_are_expensive = texels.barriers_are_expensive = true;
  texels.texel_fetch_beats_storage_loads = true;
  return {scalar, vec4, texels};
}

struct Shape {
  uint32_t M, N, K;
};
// Multiples of 4 take the vec4 and texel kernels; odd sizes leave partial tiles and fall back.
const Shape kShapes[] = {{23, 36, 20}, {7, 13, 9}};

// y = x · W + b with x stored as `act`, W as `wt` and y as `yt`, through `q`'s kernel.
std::vector<float> forward(const DeviceQuirks& q, kernels::MatmulShape m, DType act, DType wt,
                           DType yt, const std::vector<float>& x, const std::vector<float>& w,
                           const std::vector<float>& bias) {
  m.x_dtype = act, m.w_dtype = wt, m.y_dtype = yt;
  Buffer xb = upload_as(x, act), wb = upload_as(w, wt), bb = test::upload_buffer(bias, "bias");
  Buffer yb = garbage_as(std::size_t(m.M) * m.N, yt);
  test::run_once({kernels::matmul_forward(q, m, xb.whole(), wb.whole(), bb.whole(), yb.whole())});
  return read_as(yb, std::size_t(m.M) * m.N, yt);
}

}  // namespace

TEST_CASE("16-bit activations with a 16-bit weight: matmuls give the f32 kernels' bits") {
  const auto qs = paths();
  for (DType act : kTypes)
    for (DType wt : kTypes)
      for (std::size_t p = 0; p < qs.size(); ++p)
        for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in})
          for (const Shape& sh : kShapes) {
            DYNAMIC_SECTION(dtype_name(act)
                            << " x, " << dtype_name(wt) << " W, path " << p << ", layout "
                            << int(layout) << ", " << sh.M << "x" << sh.N << "x" << sh.K) {
              kernels::MatmulShape m;
              m.M = sh.M, m.N = sh.N, m.K = sh.K, m.layout = layout;
              const auto x = rounded(test::random_floats(std::size_t(sh.M) * sh.K, 71), act);
              const auto w = rounded(test::random_floats(std::size_t(sh.K) * sh.N, 72), wt);
              const auto bias = test::random_floats(sh.N, 73);
              const auto want = forward(qs[p], m, DType::f32, DType::f32, DType::f32, x, w, bias);
              // The result stored as the activation, and as the chunked head's fp32 logits.
              REQUIRE(test::bit_identical(forward(qs[p], m, act, wt, act, x, w, bias),
                                          rounded(want, act)));
              REQUIRE(
                  test::bit_identical(forward(qs[p], m, act, wt, DType::f32, x, w, bias), want));
              // dx = dy · Wᵀ: dy and dx are gradients (fp32), W 16-bit.
              const auto dy = test::random_floats(std::size_t(sh.M) * sh.N, 74);
              std::vector<float> dx[2];
              for (DType t : {DType::f32, wt}) {
                kernels::MatmulShape mb = m;
                mb.w_dtype = t;
                Buffer dyb = test::upload_buffer(dy, "dy"), wb = upload_as(w, t);
                Buffer dxb = test::garbage_buffer<float>(std::size_t(sh.M) * sh.K, "dx");
                test::run_once(
                    {kernels::matmul_backward_input(qs[p], mb, dyb.whole(), wb.whole(), dxb.whole(),
                                                    kernels::GradWrite::overwrite)});
                dx[t == DType::f32 ? 0 : 1] = test::read<float>(dxb, std::size_t(sh.M) * sh.K);
              }
              REQUIRE(test::bit_identical(dx[1], dx[0]));
            }
          }
}

TEST_CASE("16-bit activations with 16-bit tables: the embedding gives the f32 kernel's bits") {
  const uint32_t B = 2, T = 7, C = 12, V = 19;
  std::vector<uint32_t> tokens{0, 18, 3, 3, 7, 1, 2, 9, 11, 5, 18, 4, 0, 6};
  Buffer tb = test::upload_buffer(tokens, "tokens");
  const std::size_t n = std::size_t(B) * T * C;
  for (DType act : kTypes)
    for (DType wt : kTypes) {
      DYNAMIC_SECTION(dtype_name(act) << " x, " << dtype_name(wt) << " tables") {
        const auto wte = rounded(test::random_floats(V * C, 75), wt);
        const auto wpe = rounded(test::random_floats(T * C, 76), wt);
        std::vector<float> x[2];
        for (bool sixteen : {false, true}) {
          kernels::EmbeddingShape e{B, T, C, V, T};
          e.table_dtype = sixteen ? wt : DType::f32;
          e.x_dtype = sixteen ? act : DType::f32;
          Buffer wteb = upload_as(wte, e.table_dtype), wpeb = upload_as(wpe, e.table_dtype);
          Buffer xb = garbage_as(n, e.x_dtype);
          const auto d = kernels::embedding_forward(test::device().plan().quirks, e, tb.whole(),
                                                    wteb.whole(), wpeb.whole(), xb.whole());
          if (sixteen)
            for (const Dispatch& k : d)
              REQUIRE(k.kernel ==
                      kernels::kernel_variant(KernelId::embedding_forward, {DType::f32, wt, act}));
          test::run_once(d);
          x[sixteen ? 1 : 0] = read_as(xb, n, e.x_dtype);
        }
        REQUIRE(test::bit_identical(x[1], rounded(x[0], act)));
      }
    }
}

TEST_CASE("16-bit activations with a 16-bit frozen head: chunked losses and dx are exact") {
  // 130 rows in chunks of 64 (a partial last chunk), an odd vocabulary; the head is frozen (no
  // dW), as under LoRA, so the 16-bit weight may be compared with its widened f32 copy.
  const uint32_t rows = 130, C = 12, V = 37, chunk = 64;
  const auto targets = test::random_indices(rows, 77, V);
  const auto dy_scale = std::vector<float>{0.0f, 1.0f / rows};
  const auto qs = paths();
  for (DType act : kTypes)
    for (DType wt : kTypes)
      for (std::size_t p = 0; p < qs.size(); ++p) {
        DYNAMIC_SECTION(dtype_name(act) << " x, " << dtype_name(wt) << " head, path " << p) {
          const auto x = rounded(test::random_floats(std::size_t(rows) * C, 78, -2, 2), act);
          const auto w = rounded(test::random_floats(std::size_t(V) * C, 79), wt);
          std::vector<float> losses[2], dx[2];
          for (DType t : {DType::f32, wt}) {
            const int i = t == DType::f32 ? 0 : 1;
            kernels::HeadLossShape s{rows, C, V, chunk};
            s.w_dtype = t;
            s.x_dtype = act;
            Buffer xb = upload_as(x, act), wb = upload_as(w, t);
            Buffer tb = test::upload_buffer(targets, "targets");
            Buffer lb = test::garbage_buffer<float>(rows, "losses");
            Buffer dxb = test::garbage_buffer<float>(std::size_t(rows) * C, "dx");
            Buffer ws = test::garbage_buffer<float>(std::size_t(chunk) * V, "logits chunk");
            Buffer sb = test::upload_buffer(dy_scale, "scale");
            auto d = kernels::head_loss_forward(qs[p], s, xb.whole(), wb.whole(), tb.whole(),
                                                lb.whole(), ws.whole());
            for (Dispatch& k : kernels::head_loss_backward(
                     qs[p], s, xb.whole(), wb.whole(), tb.whole(), dxb.whole(), {}, ws.whole(),
                     {sb.whole(), 1}, kernels::GradWrite::overwrite, kernels::GradWrite::overwrite))
              d.push_back(std::move(k));
            test::run_once(std::move(d));
            losses[i] = test::read<float>(lb, rows);
            dx[i] = test::read<float>(dxb, std::size_t(rows) * C);
          }
          REQUIRE(test::bit_identical(losses[1], losses[0]));
          REQUIRE(test::bit_identical(dx[1], dx[0]));
        }
      }
}
