// The block-weight matmuls (runtime/kernels/matmul_blocks.h) against the f32 kernels run on the
// decoded weight (formats/gguf_blocks.h's decode_blocks), bit for bit: every quantized type the
// GPU decodes, forward with and without bias, input gradient overwritten and accumulated, on
// shapes with partial tiles (M not a tile multiple, N odd, K of 1, 2, 3 and a few hundred blocks),
// on both kernel paths (storage buffers as on GPUs, whose f32 kernels are matmul_forward and
// matmul_backward_input; texel views where texelFetch beats storage loads, whose f32 kernels are
// matmul_dot_texels and matmul_outer_texels), and against the same chains computed on the CPU.
// Weights: blocks with moderate random scales, blocks with any finite scale (zero, subnormal,
// extreme), and rows quantized by ggml. Also: W in binding pieces, the input gradient's reduction
// in blocks, grids past 65535 row groups, and the refusals. Their timing against the f32 kernels
// is matmul_blocks_bench_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf_blocks.h"
#include "formats/gguf_types.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_blocks.h"
#include "tests/formats/ggml_library.h"
#include "tests/formats/gguf_block_samples.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::GradWrite;
using kernels::WeightLayout;

namespace {

const GgmlType kTypes[] = {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0,
                           GgmlType::q5_1, GgmlType::q2_k, GgmlType::q3_k, GgmlType::q4_k,
                           GgmlType::q5_k, GgmlType::q6_k};

uint32_t id(GgmlType t) {
  return static_cast<uint32_t>(t);
}
std::string name(GgmlType t) {
  return std::string(ggml_type_info(t).name);
}

// Where W's blocks come from.
enum class Source { moderate, any_scale, ggml };
const char* source_name(Source s) {
  return s == Source::moderate ? "moderate scales" : s == Source::any_scale ? "any scale" : "ggml";
}

// N rows of K values of t. moderate: random codes with f16 scales of magnitude 2^-6..2^1, so the
// products in a chain are of one order and its rounding depends on every term; any_scale:
// test::random_blocks (±0, subnormal and extreme scales too); ggml: normal rows quantized by
// ggml's own quantizer (empty where its library was not fetched).
std::vector<std::byte> weight_blocks(GgmlType t, uint32_t N, uint32_t K, Source src,
                                     std::mt19937& rng) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  const size_t blocks = size_t(N) * K / info.block_values;
  if (src == Source::ggml) {
    const test::GgmlLibrary* ggml = test::ggml_library();
    if (!ggml) return {};
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> x(size_t(N) * K);
    for (float& v : x) v = normal(rng);
    std::vector<std::byte> q(ggml_row_bytes(t, x.size()));
    REQUIRE(ggml->quantize_chunk(int(t), x.data(), q.data(), 0, N, K, nullptr) == q.size());
    return q;
  }
  std::vector<std::byte> bytes = test::random_blocks(t, blocks, rng);
  if (src == Source::moderate)
    for (size_t b = 0; b < blocks; ++b)
      for (uint32_t offset : test::f16_field_offsets(t)) {
        const uint16_t h = uint16_t((rng() & 0x83FFu) | (9 + rng() % 8) << 10);
        bytes[b * info.block_bytes + offset] = std::byte(h & 0xFF);
        bytes[b * info.block_bytes + offset + 1] = std::byte(h >> 8);
      }
  return bytes;
}

std::vector<float> decoded(GgmlType t, const std::vector<std::byte>& bytes, size_t values) {
  std::vector<float> w(values);
  decode_blocks(t, bytes, w);
  return w;
}

// The bytes in a device buffer padded to a multiple of `pad` bytes (pad bytes arbitrary): 16
// lets CPU drivers read W through 16-byte texels, 4 (whole words) is the least the kernels take.
Buffer upload_blocks(const std::vector<std::byte>& bytes, size_t pad = 16) {
  std::vector<uint8_t> words((bytes.size() + pad - 1) / pad * pad, 0xA5);
  for (size_t i = 0; i < bytes.size(); ++i) words[i] = uint8_t(bytes[i]);
  return test::upload_buffer(words, "w blocks");
}

// The two ways the matmuls run: storage buffers (GPUs) and texel views (llvmpipe).
enum class Path { storage, texels };
const char* path_name(Path p) {
  return p == Path::storage ? "storage" : "texels";
}
DeviceQuirks quirks_for(Path p) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = p == Path::texels;
  q.texel_fetch_beats_storage_loads = p == Path::texels;
  return q;
}

// Runs what `make` builds on output buffer `out` (starting as out0, or NaN garbage where empty)
// and returns its `count` floats.
using Make = std::function<std::vector<Dispatch>(BufferSlice out)>;
std::vector<float> run(std::size_t count, const std::vector<float>& out0, const Make& make) {
  Buffer ob =
      out0.empty() ? test::garbage_buffer<float>(count, "out") : test::upload_buffer(out0, "out");
  test::run_once(make(ob.whole()));
  return test::read<float>(ob, count);
}

// The first element where the block kernel's result differs from the expected one (the f32
// kernel's on the decoded W, or the CPU's chains), as a failure naming both values' bits.
void require_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                       const std::string& what) {
  REQUIRE(got.size() == want.size());
  if (test::bit_identical(got, want)) return;
  size_t i = 0;
  while (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) ++i;
  FAIL(what << ": element " << i << " of " << got.size() << ": blocks " << std::hexfloat << got[i]
            << ", expected " << want[i]);
}

struct Shape {
  uint32_t M, N;
  uint32_t blocks32, blocks256;  // K in blocks of a 32-value type, of a 256-value type
  uint32_t blocks(GgmlType t) const {
    return ggml_type_info(t).block_values == 32 ? blocks32 : blocks256;
  }
};
// M not a multiple of the tiles' 16 (texels) or 4 (storage) rows, N odd or even (the texel path
// reads dout four n per texel where N allows), K of 1, 2, 3 and a few hundred blocks (60 of the
// K-quants: K stays below 65536, as the scalar f32 kernel's one-k-per-iteration loop must on
// llvmpipe, which ends an invocation's loops after 65535 iterations); one row of W.
const Shape kShapes[] = {
    {37, 9, 1, 1}, {70, 12, 2, 2}, {5, 31, 3, 3}, {9, 4, 300, 60}, {1, 1, 2, 2}};

// One problem: W's blocks and decoded values, on the device, with the activations.
struct Problem {
  GgmlType t;
  kernels::MatmulShape s;
  std::vector<std::byte> blocks;
  std::vector<float> w;  // decode_blocks(blocks)
};

Problem problem(GgmlType t, const Shape& c, Source src, std::mt19937& rng) {
  const uint32_t K = c.blocks(t) * ggml_type_info(t).block_values;
  Problem p{t, {c.M, c.N, K, WeightLayout::out_in}, weight_blocks(t, c.N, K, src, rng), {}};
  if (!p.blocks.empty()) p.w = decoded(t, p.blocks, size_t(c.N) * K);
  return p;
}

// The chains every matmul kernel computes, on the CPU: one multiply-add per reduction step in
// ascending order from 0, then + bias, or old + sum. Vulkan lets the shaders' fma round once
// (std::fma) or twice, the product then the sum (`fused` false), as llvmpipe's does.
float mad(float a, float b, float c, bool fused) {
  if (fused) return std::fma(a, b, c);
  volatile float product = a * b;  // rounded to float before the add, whatever the contraction
  return product + c;
}

std::vector<float> cpu_forward(const kernels::MatmulShape& s, const std::vector<float>& x,
                               const std::vector<float>& w, const std::vector<float>& bias,
                               bool fused) {
  std::vector<float> out(size_t(s.M) * s.N);
  for (size_t m = 0; m < s.M; ++m)
    for (size_t n = 0; n < s.N; ++n) {
      float acc = 0.0f;
      for (size_t k = 0; k < s.K; ++k) acc = mad(x[m * s.K + k], w[n * s.K + k], acc, fused);
      out[m * s.N + n] = bias.empty() ? acc : acc + bias[n];
    }
  return out;
}

std::vector<float> cpu_backward_input(const kernels::MatmulShape& s, const std::vector<float>& dy,
                                      const std::vector<float>& w, const std::vector<float>& dx0,
                                      bool fused) {
  std::vector<float> dx(size_t(s.M) * s.K);
  for (size_t m = 0; m < s.M; ++m)
    for (size_t k = 0; k < s.K; ++k) {
      float acc = 0.0f;
      for (size_t n = 0; n < s.N; ++n) acc = mad(dy[m * s.N + n], w[n * s.K + k], acc, fused);
      dx[m * s.K + k] = dx0.empty() ? acc : dx0[m * s.K + k] + acc;
    }
  return dx;
}

// `got` is the CPU's chains with the device's multiply-add, fused or not.
void require_cpu_chains(const std::vector<float>& got,
                        const std::function<std::vector<float>(bool fused)>& chains,
                        const std::string& what) {
  if (test::bit_identical(got, chains(true))) return;
  require_same_bits(got, chains(false), what + " (CPU chains, fused or not)");
}

// out[M,N] by the block kernel and by the f32 kernel on the decoded W, bit for bit, and the
// same chains on the CPU.
// The kernel a dispatch should run: the texel one on the texel path where W's slice reaches a
// whole texel past its bytes.
bool texel_kernel(Path path, const Problem& p, size_t pad) {
  const size_t bytes = p.blocks.size();
  return path == Path::texels && (bytes + pad - 1) / pad * pad >= (bytes + 15) / 16 * 16;
}

void require_forward(const Problem& p, Path path, bool with_bias, const std::string& what,
                     size_t pad = 16) {
  const DeviceQuirks q = quirks_for(path);
  const auto& s = p.s;
  const auto x = test::random_floats(size_t(s.M) * s.K, s.M + s.K);
  const auto bias = test::random_floats(s.N, 7);
  Buffer xb = test::upload_buffer(x, "x"), bb = test::upload_buffer(bias, "bias");
  Buffer wq = upload_blocks(p.blocks, pad), wf = test::upload_buffer(p.w, "w f32");
  const BufferSlice b = with_bias ? bb.whole() : BufferSlice{};
  const size_t count = size_t(s.M) * s.N;
  std::vector<Dispatch> dq;
  const auto got = run(count, {}, [&](BufferSlice out) {
    return dq =
               kernels::matmul_blocks_forward_pieces(q, s, id(p.t), xb.whole(), wq.whole(), b, out);
  });
  const auto want = run(count, {}, [&](BufferSlice out) {
    return kernels::matmul_forward_pieces(q, s, xb.whole(), wf.whole(), b, out);
  });
  REQUIRE(dq.size() == 1);
  REQUIRE(dq[0].kernel == (texel_kernel(path, p, pad) ? KernelId::matmul_blocks_forward_texels
                                                      : KernelId::matmul_blocks_forward));
  require_same_bits(got, want, what);
  require_cpu_chains(
      got,
      [&](bool fused) {
        return cpu_forward(s, x, p.w, with_bias ? bias : std::vector<float>{}, fused);
      },
      what);
}

void require_backward(const Problem& p, Path path, GradWrite mode, const std::string& what,
                      size_t pad = 16) {
  const DeviceQuirks q = quirks_for(path);
  const auto& s = p.s;
  const auto dy = test::random_floats(size_t(s.M) * s.N, s.M + 1);
  const size_t count = size_t(s.M) * s.K;
  const std::vector<float> dx0 =
      mode == GradWrite::accumulate ? test::random_floats(count, 5) : std::vector<float>{};
  Buffer dyb = test::upload_buffer(dy, "dy");
  Buffer wq = upload_blocks(p.blocks, pad), wf = test::upload_buffer(p.w, "w f32");
  std::vector<Dispatch> dq;
  const auto got = run(count, dx0, [&](BufferSlice dx) {
    return dq = kernels::matmul_blocks_backward_input_pieces(q, s, id(p.t), dyb.whole(), wq.whole(),
                                                             dx, mode);
  });
  for (const Dispatch& d : dq)
    REQUIRE(d.kernel == (texel_kernel(path, p, pad) ? KernelId::matmul_blocks_backward_input_texels
                                                    : KernelId::matmul_blocks_backward_input));
  const auto want = run(count, dx0, [&](BufferSlice dx) {
    return kernels::matmul_backward_input_pieces(q, s, dyb.whole(), wf.whole(), dx, mode);
  });
  require_same_bits(got, want, what);
  require_cpu_chains(
      got, [&](bool fused) { return cpu_backward_input(s, dy, p.w, dx0, fused); }, what);
}

// The backward texel kernel is the costly one to compile on llvmpipe (about half a minute a type,
// against two seconds for the storage one), so the suite runs it for one type of each decoder
// family (plain 32-value blocks, 32-value blocks with a high bit, the K-quants with 6-bit and
// 8-bit scales) and the storage kernel for every type; REMAT_TEST_EVERY_BLOCK_PATH=1 runs both for
// every type. Both decode through the same gguf_row_run16 the forward test covers for all types.
std::vector<Path> backward_paths(GgmlType t) {
  static const bool every = std::getenv("REMAT_TEST_EVERY_BLOCK_PATH") != nullptr;
  const bool texels = every || t == GgmlType::q8_0 || t == GgmlType::q5_1 || t == GgmlType::q4_k ||
                      t == GgmlType::q6_k;
  if (texels) return {Path::storage, Path::texels};
  return {Path::storage};
}

std::string label(GgmlType t, Path path, const Shape& c, Source src) {
  return name(t) + " " + path_name(path) + " " + std::to_string(c.M) + "x" + std::to_string(c.N) +
         "x" + std::to_string(c.blocks(t)) + " blocks, " + source_name(src);
}

}  // namespace

TEST_CASE("matmul_blocks forward: the f32 kernels' bits on the decoded weight") {
  std::mt19937 rng(41);
  for (GgmlType t : kTypes) {
    DYNAMIC_SECTION(name(t)) {
      size_t outputs = 0;
      for (Source src : {Source::moderate, Source::any_scale, Source::ggml})
        for (const Shape& c : kShapes) {
          const Problem p = problem(t, c, src, rng);
          if (p.blocks.empty()) continue;  // no ggml library: skipped with its warning
          for (Path path : {Path::storage, Path::texels})
            for (bool bias : {false, true}) {
              require_forward(p, path, bias,
                              label(t, path, c, src) + (bias ? ", bias" : ", no bias"));
              outputs += size_t(c.M) * c.N;
            }
        }
      std::printf("%-5s forward: %7zu outputs equal the f32 kernels' bits\n", name(t).c_str(),
                  outputs);
    }
  }
}

TEST_CASE("matmul_blocks backward input: the f32 kernels' bits, overwritten and accumulated") {
  std::mt19937 rng(43);
  for (GgmlType t : kTypes) {
    DYNAMIC_SECTION(name(t)) {
      size_t outputs = 0;
      for (Source src : {Source::moderate, Source::any_scale, Source::ggml})
        for (const Shape& c : kShapes) {
          const Problem p = problem(t, c, src, rng);
          if (p.blocks.empty()) continue;
          for (Path path : backward_paths(t))
            for (GradWrite mode : {GradWrite::overwrite, GradWrite::accumulate}) {
              require_backward(
                  p, path, mode,
                  label(t, path, c, src) +
                      (mode == GradWrite::accumulate ? ", accumulate" : ", overwrite"));
              outputs += size_t(c.M) * p.s.K;
            }
        }
      std::printf("%-5s backward input: %7zu outputs equal the f32 kernels' bits\n",
                  name(t).c_str(), outputs);
    }
  }
}

TEST_CASE("matmul_blocks: W padded to whole words only runs the storage kernels, same bits") {
  // Where W's slice ends short of a whole 16-byte texel, CPU drivers run the storage kernels
  // (which the storage path above covers for every type): three types whose 9 rows do.
  std::mt19937 rng(45);
  for (GgmlType t : {GgmlType::q8_0, GgmlType::q5_1, GgmlType::q6_k}) {
    DYNAMIC_SECTION(name(t)) {
      const Problem p = problem(t, {37, 9, 1, 1}, Source::moderate, rng);
      REQUIRE_FALSE(texel_kernel(Path::texels, p, 4));
      require_forward(p, Path::texels, true, name(t) + " forward, W in words", 4);
      for (GradWrite mode : {GradWrite::overwrite, GradWrite::accumulate})
        require_backward(p, Path::texels, mode, name(t) + " backward input, W in words", 4);
    }
  }
}

TEST_CASE("matmul_blocks: W bound in pieces of whole rows gives the f32 kernels' bits") {
  // 64 q8_0 values are 68 bytes a row, so a piece starts 256-byte aligned every 64 rows: a
  // 64-row binding limit cuts 150 rows into 64 + 64 + 22. The f32 kernels cut their 256-byte
  // rows at the same rows under a limit of 64 of them.
  std::mt19937 rng(47);
  for (Path path : {Path::storage, Path::texels}) {
    DYNAMIC_SECTION(path_name(path)) {
      const GgmlType t = GgmlType::q8_0;
      const Problem p = problem(t, {21, 150, 2, 2}, Source::moderate, rng);
      DeviceQuirks q = quirks_for(path), qf = q;
      q.max_binding_bytes = 64 * 68 + 3;  // not a whole word: pieces still bind whole words
      qf.max_binding_bytes = 64 * 256;
      const auto pieces = kernels::block_weight_pieces(q, p.s, id(t));
      REQUIRE(pieces.size() == 3);
      REQUIRE(pieces[1].begin == 64);
      REQUIRE(pieces[2].count == 22);
      REQUIRE(kernels::weight_pieces(qf, p.s).size() == 3);
      const auto& s = p.s;
      const auto x = test::random_floats(size_t(s.M) * s.K, 3);
      const auto bias = test::random_floats(s.N, 4);
      const auto dy = test::random_floats(size_t(s.M) * s.N, 5);
      const auto dx0 = test::random_floats(size_t(s.M) * s.K, 6);
      Buffer xb = test::upload_buffer(x, "x"), bb = test::upload_buffer(bias, "bias"),
             dyb = test::upload_buffer(dy, "dy");
      Buffer wq = upload_blocks(p.blocks), wf = test::upload_buffer(p.w, "w f32");
      const size_t out_count = size_t(s.M) * s.N, dx_count = size_t(s.M) * s.K;
      std::vector<Dispatch> ds;
      const auto out = run(out_count, {}, [&](BufferSlice o) {
        return ds = kernels::matmul_blocks_forward_pieces(q, s, id(t), xb.whole(), wq.whole(),
                                                          bb.whole(), o);
      });
      REQUIRE(ds.size() == 3);
      // Pieces bind whole words, or on the texel path whole 16-byte texels (W is padded to 16).
      for (const Dispatch& d : ds) REQUIRE(d.bindings[1].slice.size % 4 == 0);
      REQUIRE(ds[2].bindings[1].slice.size == (path == Path::texels ? 1504u : 22u * 68));
      require_same_bits(out,
                        run(out_count, {},
                            [&](BufferSlice o) {
                              return kernels::matmul_forward_pieces(qf, s, xb.whole(), wf.whole(),
                                                                    bb.whole(), o);
                            }),
                        "forward in pieces");
      for (GradWrite mode : {GradWrite::overwrite, GradWrite::accumulate}) {
        const std::vector<float> start = mode == GradWrite::accumulate ? dx0 : std::vector<float>{};
        const auto dx = run(dx_count, start, [&](BufferSlice o) {
          return ds = kernels::matmul_blocks_backward_input_pieces(q, s, id(t), dyb.whole(),
                                                                   wq.whole(), o, mode);
        });
        REQUIRE(ds.size() == 3);
        require_same_bits(dx,
                          run(dx_count, start,
                              [&](BufferSlice o) {
                                return kernels::matmul_backward_input_pieces(qf, s, dyb.whole(),
                                                                             wf.whole(), o, mode);
                              }),
                          "backward input in pieces");
        if (mode == GradWrite::overwrite) {  // continued chains: the unsplit bits
          DeviceQuirks whole = q;
          whole.max_binding_bytes = 0;
          require_same_bits(dx,
                            run(dx_count, {},
                                [&](BufferSlice o) {
                                  return kernels::matmul_blocks_backward_input_pieces(
                                      whole, s, id(t), dyb.whole(), wq.whole(), o, mode);
                                }),
                            "backward input in pieces against unsplit");
        }
      }
    }
  }
}

TEST_CASE("matmul_blocks: a long input-gradient reduction runs in blocks of W, same bits") {
  // 70000 rows of 34 bytes: on CPU drivers the sum over n runs as dispatches over blocks of
  // 1 MiB of W (30840 rows), each continuing the chains the last stored, as the f32 kernel's
  // does; an accumulated gradient stays one dispatch.
  std::mt19937 rng(61);
  const GgmlType t = GgmlType::q8_0;
  const Problem p = problem(t, {20, 70000, 1, 1}, Source::moderate, rng);
  const DeviceQuirks q = quirks_for(Path::texels);
  for (GradWrite mode : {GradWrite::overwrite, GradWrite::accumulate}) {
    Buffer dyb = test::garbage_buffer<float>(1, "dy"), wq = upload_blocks(p.blocks);
    const auto ds = kernels::matmul_blocks_backward_input_pieces(q, p.s, id(t), dyb.whole(),
                                                                 wq.whole(), dyb.whole(), mode);
    REQUIRE(ds.size() == (mode == GradWrite::overwrite ? 3u : 1u));
    require_backward(p, Path::texels, mode,
                     mode == GradWrite::overwrite ? "in blocks, overwrite" : "accumulate");
  }
}

TEST_CASE("matmul_blocks: more row groups than one grid axis holds") {
  // The storage path's tiles cover 4 rows: 270000 rows are 67500 row groups, past 65535 (the grid
  // continues along z), beyond what the f32 kernels dispatch; checked against the chains on the
  // CPU instead.
  std::mt19937 rng(53);
  const GgmlType t = GgmlType::q4_0;
  const Problem p = problem(t, {270000, 3, 1, 1}, Source::moderate, rng);
  const DeviceQuirks q = quirks_for(Path::storage);
  const auto& s = p.s;
  const auto x = test::random_floats(size_t(s.M) * s.K, 1);
  const auto bias = test::random_floats(s.N, 2);
  const auto dy = test::random_floats(size_t(s.M) * s.N, 3);
  Buffer xb = test::upload_buffer(x, "x"), bb = test::upload_buffer(bias, "bias"),
         dyb = test::upload_buffer(dy, "dy"), wq = upload_blocks(p.blocks);
  std::vector<Dispatch> ds;
  const auto out = run(size_t(s.M) * s.N, {}, [&](BufferSlice o) {
    return ds = {
               kernels::matmul_blocks_forward(q, s, id(t), xb.whole(), wq.whole(), bb.whole(), o)};
  });
  REQUIRE(ds[0].groups[2] == 2);
  require_cpu_chains(
      out, [&](bool fused) { return cpu_forward(s, x, p.w, bias, fused); }, "forward, 270000 rows");
  const auto dx = run(size_t(s.M) * s.K, {}, [&](BufferSlice o) {
    return ds = {kernels::matmul_blocks_backward_input(q, s, id(t), dyb.whole(), wq.whole(), o,
                                                       GradWrite::overwrite)};
  });
  REQUIRE(ds[0].groups[2] == 2);
  require_cpu_chains(
      dx, [&](bool fused) { return cpu_backward_input(s, dy, p.w, {}, fused); },
      "backward input, 270000 rows");
}

TEST_CASE("matmul_blocks: the dispatches refuse what they cannot compute") {
  const DeviceQuirks q = test::device().plan().quirks;
  Buffer w = test::garbage_buffer<uint32_t>(64, "w");
  Buffer x = test::garbage_buffer<float>(256, "x");
  const uint32_t q8 = id(GgmlType::q8_0);
  const kernels::MatmulShape s{2, 3, 32, WeightLayout::out_in};  // 3 rows of 34 bytes: 104
  auto forward = [&](const kernels::MatmulShape& shape, uint32_t type, BufferSlice wb) {
    return kernels::matmul_blocks_forward(q, shape, type, x.whole(), wb, {}, x.whole());
  };
  CHECK_NOTHROW(forward(s, q8, {w.whole().buffer, 0, 104}));
  CHECK_THROWS_WITH(forward(s, q8, {w.whole().buffer, 0, 102}), Catch::Contains("take 104 bytes"));
  CHECK_THROWS_WITH(forward(s, id(GgmlType::f16), w.whole()),
                    Catch::Contains("not a quantized block type"));
  CHECK_THROWS_WITH(forward(s, id(GgmlType::iq4_nl), w.whole()),
                    Catch::Contains("not a quantized block type"));
  kernels::MatmulShape bad = s;
  bad.K = 48;
  CHECK_THROWS_WITH(forward(bad, q8, w.whole()), Catch::Contains("not a whole number of blocks"));
  bad = s;
  bad.K = 256;
  CHECK_THROWS_WITH(forward(bad, id(GgmlType::q4_k), w.whole()), Catch::Contains("take"));
  bad = s;
  bad.layout = WeightLayout::in_out;
  CHECK_THROWS_WITH(forward(bad, q8, w.whole()), Catch::Contains("(out, in)"));
  bad = s;
  bad.x_dtype = DType::bf16;
  CHECK_THROWS_WITH(forward(bad, q8, w.whole()), Catch::Contains("activations are f32"));
  bad = s;
  bad.w_dtype = DType::f16;
  CHECK_THROWS_WITH(kernels::matmul_blocks_backward_input(q, bad, q8, x.whole(), w.whole(),
                                                          x.whole(), GradWrite::overwrite),
                    Catch::Contains("w_dtype stays f32"));
  bad = s;
  bad.M = 0;
  CHECK_THROWS_WITH(forward(bad, q8, w.whole()), Catch::Contains("empty"));
  // A binding smaller than the smallest 256-byte aligned piece of whole rows (64 rows of 68).
  DeviceQuirks tiny = q;
  tiny.max_binding_bytes = 1024;
  const kernels::MatmulShape big{2, 100, 64, WeightLayout::out_in};
  CHECK_THROWS_WITH(kernels::block_weight_pieces(tiny, big, q8), Catch::Contains("do not fit"));
  CHECK(kernels::block_row_bytes(id(GgmlType::q6_k), 512) == 420);
  for (GgmlType t : kTypes) CHECK(kernels::matmul_blocks_reads(id(t)));
  for (GgmlType t : {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q8_1})
    CHECK_FALSE(kernels::matmul_blocks_reads(id(t)));
}
