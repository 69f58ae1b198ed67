// GGUF block decoding on the GPU (shaders/gguf_blocks.glsl through dequantize_blocks.comp)
// against formats/gguf_blocks.h's decode_blocks, which is ggml's dequantize_row_* bit for bit:
// every type, random blocks with zero, subnormal, negative and extreme f16 scales, rows quantized
// by ggml's own quantizer where its library was fetched, every f16 and bf16 pattern, odd block
// counts; per value and in runs of 4, 8 and 16, all compared as uint32 bits. Also the
// dispatch's checks, and a hidden decode-throughput benchmark ([.bench]).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf_blocks.h"
#include "formats/gguf_types.h"
#include "runtime/kernels/dequantize_blocks.h"
#include "tests/formats/ggml_library.h"
#include "tests/formats/gguf_block_samples.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

uint32_t id(GgmlType t) {
  return static_cast<uint32_t>(t);
}

std::string name(GgmlType t) {
  return std::string(ggml_type_info(t).name);
}

// The bytes in a device buffer padded to whole 4-byte words (the pad bytes arbitrary).
Buffer upload_blocks(const std::vector<std::byte>& bytes) {
  std::vector<uint8_t> words((bytes.size() + 3) / 4 * 4, 0xA5);
  std::transform(bytes.begin(), bytes.end(), words.begin(), [](std::byte b) { return uint8_t(b); });
  return test::upload_buffer(words, "blocks");
}

// The GPU's values of `bytes` (whole blocks of t), decoded in runs of `run`, as float bits.
std::vector<uint32_t> gpu_decode(GgmlType t, const std::vector<std::byte>& bytes, uint32_t run) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  const auto count = uint32_t(bytes.size() / info.block_bytes * info.block_values);
  Buffer blocks = upload_blocks(bytes);
  Buffer y = test::garbage_buffer<float>(count, "y");
  test::run_once({kernels::dequantize_blocks(id(t), count, blocks.whole(), y.whole(), run)});
  return test::read<uint32_t>(y, count);
}

std::vector<uint32_t> cpu_decode(GgmlType t, const std::vector<std::byte>& bytes) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  std::vector<float> out(bytes.size() / info.block_bytes * info.block_values);
  decode_blocks(t, bytes, out);
  std::vector<uint32_t> bits(out.size());
  std::transform(out.begin(), out.end(), bits.begin(),
                 [](float f) { return std::bit_cast<uint32_t>(f); });
  return bits;
}

// The GPU decodes `bytes` per value, in runs of 4 and of 8, each equal to decode_blocks bit for
// bit (so runs equal single values); reports the first difference. Returns the values compared.
size_t require_gpu_decodes(GgmlType t, const std::vector<std::byte>& bytes,
                           const std::string& what) {
  const std::vector<uint32_t> want = cpu_decode(t, bytes);
  const uint32_t per_block = ggml_type_info(t).block_values;
  std::vector<uint32_t> single;
  for (uint32_t run : {1u, 4u, 8u, 16u}) {
    const std::vector<uint32_t> got = gpu_decode(t, bytes, run);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == want[i]) continue;
      char msg[320];
      std::snprintf(msg, sizeof msg,
                    "%s, runs of %u: value %zu (block %zu, value %zu of it): GPU %a (0x%08x), "
                    "decode_blocks %a (0x%08x)",
                    what.c_str(), run, i, i / per_block, i % per_block,
                    double(std::bit_cast<float>(got[i])), got[i],
                    double(std::bit_cast<float>(want[i])), want[i]);
      FAIL(msg);
    }
    if (run == 1) single = got;
    REQUIRE(got == single);
  }
  return want.size();
}

// Every f16 field of each block set to one of the edge scales in turn: ±0, the smallest and
// largest subnormals, the smallest normal, 1, the largest finite, and their negatives.
std::vector<std::byte> edge_scale_blocks(GgmlType t, std::mt19937& rng) {
  const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF,
                            0x0400, 0x8400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF};
  const std::vector<uint32_t> fields = test::f16_field_offsets(t);
  const size_t count = std::size(edges) * fields.size();
  std::vector<std::byte> bytes = test::random_blocks(t, count, rng);
  const uint32_t block_bytes = ggml_type_info(t).block_bytes;
  for (size_t b = 0; b < count; ++b) {
    for (size_t f = 0; f < fields.size(); ++f) {
      const uint16_t h = edges[(b + f * 5) % std::size(edges)];
      bytes[b * block_bytes + fields[f]] = std::byte(h & 0xFF);
      bytes[b * block_bytes + fields[f] + 1] = std::byte(h >> 8);
    }
  }
  return bytes;
}

bool quantized(GgmlType t) {
  return ggml_type_info(t).block_values > 1;
}

}  // namespace

TEST_CASE("dequantize_blocks: the GPU's block layouts are formats/gguf_types.h's") {
  for (GgmlType t : test::decodable_types()) {
    INFO(name(t));
    const auto layout = kernels::gpu_block_layout(id(t));
    REQUIRE(layout);
    CHECK(layout->values == ggml_type_info(t).block_values);
    CHECK(layout->bytes == ggml_type_info(t).block_bytes);
  }
  for (GgmlType t : {GgmlType::q8_1, GgmlType::q8_k, GgmlType::iq4_nl, GgmlType::i8}) {
    INFO(name(t));
    CHECK_FALSE(kernels::gpu_block_layout(id(t)));
  }
}

TEST_CASE("dequantize_blocks: the dispatch refuses what it cannot decode") {
  Buffer blocks = test::garbage_buffer<uint32_t>(64, "blocks");
  Buffer y = test::garbage_buffer<float>(64, "y");
  const uint32_t q8 = id(GgmlType::q8_0);
  CHECK_THROWS_WITH(kernels::dequantize_blocks(id(GgmlType::iq4_nl), 32, blocks.whole(), y.whole()),
                    Catch::Contains("not a block format the GPU decodes"));
  CHECK_THROWS_WITH(kernels::dequantize_blocks(q8, 48, blocks.whole(), y.whole()),
                    Catch::Contains("not whole blocks of 32"));
  CHECK_THROWS_WITH(kernels::dequantize_blocks(q8, 32, blocks.whole(), y.whole(), 2),
                    Catch::Contains("runs are 1, 4, 8 or 16"));
  // Two Q8_0 blocks are 68 bytes: the slice must hold 68, the third word's bytes included.
  CHECK_THROWS_WITH(kernels::dequantize_blocks(q8, 64, {blocks.whole().buffer, 0, 64}, y.whole()),
                    Catch::Contains("take 68 bytes"));
  CHECK_NOTHROW(kernels::dequantize_blocks(q8, 64, {blocks.whole().buffer, 0, 68}, y.whole()));
  CHECK_THROWS_WITH(kernels::dequantize_blocks(q8, 64, blocks.whole(), {y.whole().buffer, 0, 252}),
                    Catch::Contains("fewer than 64 floats"));
}

TEST_CASE("dequantize_blocks: random blocks decode as decode_blocks decodes them, bit for bit") {
  std::mt19937 rng(23);
  for (GgmlType t : test::decodable_types()) {
    if (!quantized(t)) continue;  // every float pattern: the next test
    DYNAMIC_SECTION(name(t)) {
      const uint32_t per_block = ggml_type_info(t).block_values;
      size_t compared = 0;
      // Odd block counts, one of them about 64 Ki values.
      for (size_t blocks : {size_t(1), size_t(3), size_t(7), size_t(65536 / per_block - 1)}) {
        compared += require_gpu_decodes(t, test::random_blocks(t, blocks, rng),
                                        name(t) + ", " + std::to_string(blocks) + " random blocks");
      }
      compared += require_gpu_decodes(t, edge_scale_blocks(t, rng), name(t) + ", edge scales");
      std::printf(
          "%-5s %6zu values of random blocks, per value and in runs of 4, 8 and 16: "
          "0 mismatches\n",
          name(t).c_str(), compared);
    }
  }
}

TEST_CASE("dequantize_blocks: every f16 and bf16 pattern and random f32 words decode exactly") {
  std::vector<std::byte> all(2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    all[2 * h] = std::byte(h & 0xFF);
    all[2 * h + 1] = std::byte(h >> 8);
  }
  for (GgmlType t : {GgmlType::f16, GgmlType::bf16}) {
    DYNAMIC_SECTION(name(t)) {
      size_t compared = require_gpu_decodes(t, all, name(t) + ", every pattern");
      // Odd counts: a run's tail, and rows that end inside a word.
      for (size_t n : {size_t(1), size_t(3), size_t(1001)}) {
        const std::vector<std::byte> part(all.begin() + 2 * 30000, all.begin() + 2 * (30000 + n));
        compared += require_gpu_decodes(t, part, name(t) + ", " + std::to_string(n) + " values");
      }
      std::printf("%-5s %6zu values: 0 mismatches\n", name(t).c_str(), compared);
    }
  }
  SECTION("f32") {
    // Random words (NaNs, infinities and subnormals among them) and the special values.
    std::mt19937 rng(29);
    std::vector<std::byte> words(4 * 4097);
    for (std::byte& b : words) b = std::byte(rng() & 0xFF);
    const uint32_t special[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF,
                                0x7F800000, 0xFF800000, 0x7FC00001, 0x7F800001};
    for (size_t i = 0; i < std::size(special); ++i)
      for (int b = 0; b < 4; ++b) words[4 * i + b] = std::byte((special[i] >> (8 * b)) & 0xFF);
    const size_t compared = require_gpu_decodes(GgmlType::f32, words, "f32, random words");
    std::printf("f32   %6zu values: 0 mismatches\n", compared);
  }
}

TEST_CASE("dequantize_blocks: rows quantized by ggml decode as decode_blocks decodes them") {
  // Blocks as ggml's quantizer writes them (its library from .ci/fetch-test-data: the test fails
  // naming the script when npm is there but the library is not, and skips with a warning without
  // npm); the random and edge-scale blocks above cover every code and scale pattern either way.
  const test::GgmlLibrary* ggml = test::ggml_library();
  if (!ggml) return;
  std::mt19937 rng(31);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (GgmlType t : test::decodable_types()) {
    if (!quantized(t)) continue;
    DYNAMIC_SECTION(name(t)) {
      // 24 rows of 768 values, each row its own magnitude (1e-5 .. 1e3), some with outliers.
      const int64_t rows = 24, n_per_row = 768;
      std::vector<float> x(size_t(rows * n_per_row));
      for (int64_t r = 0; r < rows; ++r) {
        const float scale = std::pow(10.0f, float(r % 9) - 5.0f);
        for (int64_t i = 0; i < n_per_row; ++i)
          x[size_t(r * n_per_row + i)] = normal(rng) * scale * (rng() % 97 == 0 ? 50.0f : 1.0f);
      }
      std::vector<std::byte> q(ggml_row_bytes(t, uint64_t(rows * n_per_row)));
      REQUIRE(ggml->quantize_chunk(int(t), x.data(), q.data(), 0, rows, n_per_row, nullptr) ==
              q.size());
      const size_t compared = require_gpu_decodes(t, q, name(t) + ", rows quantized by ggml");
      std::printf("%-5s %6zu values of rows quantized by ggml: 0 mismatches\n", name(t).c_str(),
                  compared);
    }
  }
}

TEST_CASE("dequantize_blocks: decode throughput per type", "[.bench]") {
  std::printf("device: %s\n", test::device().info().name.c_str());
  std::printf("%-6s %12s %12s %12s %12s  (Mvalues/s; runs of 1, 4, 8, 16 values an invocation)\n",
              "type", "value", "run4", "run8", "run16");
  std::mt19937 rng(5);
  const uint32_t values = uint32_t(1) << 22;  // 4 Mi values a type
  for (GgmlType t : test::decodable_types()) {
    const GgmlTypeInfo& info = ggml_type_info(t);
    std::vector<std::byte> bytes = quantized(t)
                                       ? test::random_blocks(t, values / info.block_values, rng)
                                       : std::vector<std::byte>(values * info.block_bytes);
    if (!quantized(t))
      for (std::byte& b : bytes) b = std::byte(rng() & 0x3F);  // finite, normal values
    Buffer blocks = upload_blocks(bytes);
    Buffer y = test::garbage_buffer<float>(values, "y");
    const uint32_t runs[] = {1, 4, 8, 16};
    double rate[4] = {};
    for (int i = 0; i < 4; ++i) {
      const uint32_t run = runs[i];
      Executor ex(test::kernels(),
                  {kernels::dequantize_blocks(id(t), values, blocks.whole(), y.whole(), run)},
                  ExecutorOptions{.timestamps = true});
      ex.run();  // warm-up
      double best = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        ex.run();
        best = std::min(best, ex.dispatch_ms()[0]);
      }
      rate[i] = values / (best * 1e-3) / 1e6;
    }
    std::printf("%-6s %12.0f %12.0f %12.0f %12.0f\n", name(t).c_str(), rate[0], rate[1], rate[2],
                rate[3]);
  }
}
