// Kernels reading a weight stored in f16 or bf16 (a frozen base under --weights-dtype): every
// variant (storage scalar, storage vec4, texel outer and dot; matmul forward and backward-input;
// embedding with and without positions, in binding pieces) gives exactly the bits its f32 kernel
// gives on the widened weights, since it widens in registers and computes in fp32, and stays close
// to the double reference on the rounded weights. Outputs start as NaN, so a missed element fails.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>

#include "base/half_float.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/embedding.h"
#include "tests/reference/matmul.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::WeightLayout;

namespace {

// A weight rounded to `t`: its 16-bit patterns and their exact widening.
struct Weight16 {
  std::vector<uint16_t> bits;
  std::vector<float> wide;
};

Weight16 rounded(const std::vector<float>& w, DType t) {
  Weight16 r;
  for (float v : w) {
    const uint16_t h = t == DType::f16 ? float_to_f16(v) : float_to_bf16(v);
    r.bits.push_back(h);
    r.wide.push_back(t == DType::f16 ? f16_to_float(h) : bf16_to_float(h));
  }
  return r;
}

// The three ways a matmul runs: storage buffers one float at a time (GPUs), vec4 storage loads
// (CPU drivers without texel views) and texel views (llvmpipe).
enum class Path { scalar, vec4, texels };

DeviceQuirks quirks_for(Path p) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = p != Path::scalar;
  q.texel_fetch_beats_storage_loads = p == Path::texels;
  return q;
}

const char* path_name(Path p) {
  return p == Path::scalar ? "scalar" : p == Path::vec4 ? "vec4" : "texels";
}

// Runs the dispatches `make` builds on weight buffer `w` and returns the `count` floats of `out`,
// which starts as `out0` (NaN garbage when empty).
using Make = std::function<std::vector<Dispatch>(BufferSlice w, BufferSlice out)>;
template <class W>
std::vector<float> run(const std::vector<W>& w, std::size_t count, const std::vector<float>& out0,
                       const Make& make) {
  Buffer wb = test::upload_buffer(w, "w");
  Buffer ob =
      out0.empty() ? test::garbage_buffer<float>(count, "out") : test::upload_buffer(out0, "out");
  test::run_once(make(wb.whole(), ob.whole()));
  return test::read<float>(ob, count);
}

// Every dispatch of the 16-bit run is the variant of the f32 run's kernel for that weight dtype,
// and a variant reading 16 bits where the weight's storage needs one (the texel kernels read f16
// through their f32 kernel and an RGBA16F view).
void require_variants(const std::vector<Dispatch>& d16, const std::vector<Dispatch>& d32, DType t) {
  REQUIRE(d16.size() == d32.size());
  for (std::size_t i = 0; i < d16.size(); ++i) {
    REQUIRE(d16[i].kernel == kernels::kernel_variant(d32[i].kernel, {DType::f32, t}));
    const auto name = std::string(kernel_name(d16[i].kernel));
    const bool texel = name.find("texels") != std::string::npos;
    if (!texel || t == DType::bf16) REQUIRE(d16[i].kernel != d32[i].kernel);
  }
}

ref::WeightLayout ref_layout(WeightLayout l) {
  return l == WeightLayout::in_out ? ref::WeightLayout::in_out : ref::WeightLayout::out_in;
}

struct Shape {
  uint32_t M, N, K;
};

// Odd sizes leave partial tiles and rule the vec4 and texel kernels out where they need
// multiples of 4 (those shapes then run the scalar kernel, still through its 16-bit variant).
const Shape kShapes[] = {{69, 144, 48}, {37, 100, 52}, {1, 4, 4}, {130, 36, 33}, {7, 9, 12}};

}  // namespace

TEST_CASE("matmul forward with an f16/bf16 weight gives the f32 kernel's bits on widened weights") {
  for (DType t : {DType::f16, DType::bf16})
    for (Path path : {Path::scalar, Path::vec4, Path::texels})
      for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in})
        for (const Shape& c : kShapes) {
          DYNAMIC_SECTION(dtype_name(t) << " " << path_name(path) << " layout " << int(layout)
                                        << " " << c.M << "x" << c.N << "x" << c.K) {
            const DeviceQuirks q = quirks_for(path);
            kernels::MatmulShape s{c.M, c.N, c.K, layout};
            const auto x = test::random_floats(size_t(c.M) * c.K, c.M);
            const auto bias = test::random_floats(c.N, 7);
            const Weight16 w = rounded(test::random_floats(size_t(c.N) * c.K, c.N), t);
            Buffer xb = test::upload_buffer(x, "x"), bb = test::upload_buffer(bias, "bias");
            std::vector<Dispatch> d16, d32;
            const std::size_t count = size_t(c.M) * c.N;
            const auto got = run(w.bits, count, {}, [&](BufferSlice wb, BufferSlice out) {
              kernels::MatmulShape s16 = s;
              s16.w_dtype = t;
              return d16 = kernels::matmul_forward_pieces(q, s16, xb.whole(), wb, bb.whole(), out);
            });
            const auto want = run(w.wide, count, {}, [&](BufferSlice wb, BufferSlice out) {
              return d32 = kernels::matmul_forward_pieces(q, s, xb.whole(), wb, bb.whole(), out);
            });
            require_variants(d16, d32, t);
            REQUIRE(test::bit_identical(got, want));
            std::vector<float> expect;
            ref::matmul_forward(expect, x, w.wide, bias, c.M, c.N, c.K, ref_layout(layout));
            test::require_close(got, test::to_double(expect), 1e-5, 1e-5 * c.K, "forward");
          }
        }
}

TEST_CASE("matmul backward-input with an f16/bf16 weight gives the f32 kernel's bits") {
  for (DType t : {DType::f16, DType::bf16})
    for (Path path : {Path::scalar, Path::vec4, Path::texels})
      for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in})
        for (const Shape& c : kShapes)
          for (auto mode : {kernels::GradWrite::overwrite, kernels::GradWrite::accumulate}) {
            DYNAMIC_SECTION(dtype_name(t)
                            << " " << path_name(path) << " layout " << int(layout) << " " << c.M
                            << "x" << c.N << "x" << c.K << " accumulate " << int(mode)) {
              const DeviceQuirks q = quirks_for(path);
              kernels::MatmulShape s{c.M, c.N, c.K, layout};
              const auto dy = test::random_floats(size_t(c.M) * c.N, c.M + 1);
              const Weight16 w = rounded(test::random_floats(size_t(c.N) * c.K, c.K), t);
              const std::size_t count = size_t(c.M) * c.K;
              const std::vector<float> dx0 = mode == kernels::GradWrite::accumulate
                                                 ? test::random_floats(count, 5)
                                                 : std::vector<float>{};
              Buffer dyb = test::upload_buffer(dy, "dy");
              std::vector<Dispatch> d16, d32;
              const auto got = run(w.bits, count, dx0, [&](BufferSlice wb, BufferSlice dx) {
                kernels::MatmulShape s16 = s;
                s16.w_dtype = t;
                return d16 =
                           kernels::matmul_backward_input_pieces(q, s16, dyb.whole(), wb, dx, mode);
              });
              const auto want = run(w.wide, count, dx0, [&](BufferSlice wb, BufferSlice dx) {
                return d32 = kernels::matmul_backward_input_pieces(q, s, dyb.whole(), wb, dx, mode);
              });
              require_variants(d16, d32, t);
              REQUIRE(test::bit_identical(got, want));
              // dx(m,k) = sum_n dy(m,n) W(k,n) with W in the forward's layout.
              std::vector<double> expect(count, 0.0);
              for (uint32_t m = 0; m < c.M; ++m)
                for (uint32_t k = 0; k < c.K; ++k) {
                  double sum = dx0.empty() ? 0.0 : dx0[size_t(m) * c.K + k];
                  for (uint32_t n = 0; n < c.N; ++n) {
                    const size_t wi =
                        layout == WeightLayout::in_out ? size_t(k) * c.N + n : size_t(n) * c.K + k;
                    sum += double(dy[size_t(m) * c.N + n]) * w.wide[wi];
                  }
                  expect[size_t(m) * c.K + k] = sum;
                }
              test::require_close(got, expect, 1e-5, 1e-5 * c.N, "backward input");
            }
          }
}

TEST_CASE("a 16-bit (out, in) weight is bound in pieces of its real row bytes") {
  // 64 columns of bf16 are 128 bytes a row: a 1 KiB binding limit holds 8 rows, where f32 rows
  // would give pieces of 4. The pieces' results are the unsplit ones.
  for (Path path : {Path::scalar, Path::texels}) {
    DYNAMIC_SECTION(path_name(path)) {
      DeviceQuirks q = quirks_for(path);
      const kernels::MatmulShape s{9, 40, 64, WeightLayout::out_in, 0, 0, DType::bf16};
      const Weight16 w = rounded(test::random_floats(size_t(s.N) * s.K, 3), DType::bf16);
      const auto x = test::random_floats(size_t(s.M) * s.K, 4);
      Buffer xb = test::upload_buffer(x, "x");
      const std::size_t count = size_t(s.M) * s.N;
      const auto whole = run(w.bits, count, {}, [&](BufferSlice wb, BufferSlice out) {
        return kernels::matmul_forward_pieces(q, s, xb.whole(), wb, {}, out);
      });
      q.max_binding_bytes = 1024;
      REQUIRE(kernels::weight_pieces(q, s).size() == 5);
      const auto pieces = run(w.bits, count, {}, [&](BufferSlice wb, BufferSlice out) {
        return kernels::matmul_forward_pieces(q, s, xb.whole(), wb, {}, out);
      });
      REQUIRE(test::bit_identical(pieces, whole));
    }
  }
}

TEST_CASE("embedding forward with f16/bf16 tables equals the fp32 reference on widened tables") {
  struct Case {
    kernels::EmbeddingShape s;
    bool positions;
    uint64_t max_binding_bytes;  // 0: the device's; else wte in pieces
  };
  const Case cases[] = {{{3, 23, 48, 101, 32}, true, 0},
                        {{2, 7, 33, 57, 7}, false, 0},
                        {{2, 9, 64, 90, 16}, true, 2048}};  // 128-byte rows: 16 a piece
  for (DType t : {DType::f16, DType::bf16})
    for (const Case& c : cases) {
      DYNAMIC_SECTION(dtype_name(t) << " C " << c.s.C << " V " << c.s.V << " positions "
                                    << c.positions << " pieces " << c.max_binding_bytes) {
        kernels::EmbeddingShape s = c.s;
        s.table_dtype = t;
        DeviceQuirks q = test::device().plan().quirks;
        if (c.max_binding_bytes) q.max_binding_bytes = c.max_binding_bytes;
        const std::size_t rows = std::size_t(s.B) * s.T;
        auto tokens = test::random_indices(rows, 11, s.V);
        tokens[rows / 2] = s.V - 1;
        const Weight16 wte = rounded(test::random_floats(std::size_t(s.V) * s.C, 12), t);
        const Weight16 wpe = rounded(test::random_floats(std::size_t(s.ctx) * s.C, 13), t);
        Buffer tb = test::upload_buffer(tokens, "tokens"),
               pb = test::upload_buffer(wpe.bits, "wpe");
        std::vector<Dispatch> ds;
        const auto got = run(wte.bits, rows * s.C, {}, [&](BufferSlice wb, BufferSlice x) {
          ds = kernels::embedding_forward(q, s, tb.whole(), wb,
                                          c.positions ? pb.whole() : BufferSlice{}, x);
          return ds;
        });
        REQUIRE(ds.size() == (c.max_binding_bytes ? 6u : 1u));
        for (const Dispatch& d : ds)
          REQUIRE(d.kernel == (t == DType::f16 ? KernelId::embedding_forward_wf16
                                               : KernelId::embedding_forward_wbf16));
        std::vector<float> x;
        const std::vector<float> no_positions(std::size_t(s.ctx) * s.C, 0.0f);
        ref::embedding_forward(x, tokens, wte.wide, c.positions ? wpe.wide : no_positions, s.B, s.T,
                               s.C);
        REQUIRE(test::bit_identical(got, x));
      }
    }
}

TEST_CASE("kernel variants: every 16-bit weight variant exists, other combinations are refused") {
  using kernels::kernel_variant;
  REQUIRE(kernel_variant(KernelId::matmul_forward, {}) == KernelId::matmul_forward);
  REQUIRE(kernel_variant(KernelId::matmul_forward_vec4, {DType::f32, DType::bf16}) ==
          KernelId::matmul_forward_vec4_wbf16);
  REQUIRE(kernel_variant(KernelId::matmul_dot_texels, {DType::f32, DType::f16}) ==
          KernelId::matmul_dot_texels);
  // Gradients are never 16-bit, and an activation is written in the type it is read in.
  REQUIRE_THROWS_AS(kernel_variant(KernelId::matmul_backward_input, {DType::bf16, DType::bf16}),
                    std::invalid_argument);
  REQUIRE_THROWS_AS(
      kernel_variant(KernelId::matmul_forward, {DType::bf16, DType::bf16, DType::f16}),
      std::invalid_argument);
  REQUIRE(kernels::texel_format_bytes(kernels::texel_format(DType::bf16, true)) == 8);
  REQUIRE(kernels::texel_format_bytes(kernels::texel_format(DType::f32, false)) == 4);
}
