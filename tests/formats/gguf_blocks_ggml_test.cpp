// GGUF block decoding against ggml itself (tests/formats/ggml_library.h): rows quantized by
// ggml_quantize_chunk and random block bytes, decoded by ggml's to_float (dequantize_row_*) and by
// remat's decode_blocks, compared bit for bit; every f16 and bf16 pattern; remat's ggml type table
// against ggml's sizes and names. Also a hidden decode-throughput benchmark ([.bench]).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf_blocks.h"
#include "tests/formats/ggml_library.h"
#include "tests/formats/gguf_block_samples.h"

using namespace remat;

namespace {

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

// Decodes `bytes` with ggml (`expected`: ggml's values) and with remat, and requires every float
// to have the same bits; reports the first difference. Returns the number of values compared.
size_t compare_with_ggml(const test::GgmlLibrary& ggml, GgmlType t,
                         const std::vector<std::byte>& bytes, const std::string& what,
                         const std::vector<float>* f32_source = nullptr) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  const size_t n = bytes.size() / info.block_bytes * info.block_values;
  std::vector<float> theirs(n);
  if (const auto to_float = ggml.to_float(t)) {
    to_float(bytes.data(), theirs.data(), int64_t(n));
  } else {
    REQUIRE(t == GgmlType::f32);  // ggml has no to_float for f32: its values are the stored ones
    REQUIRE(f32_source);
    theirs = *f32_source;
  }
  std::vector<float> ours(n);
  decode_blocks(t, bytes, ours);
  for (size_t i = 0; i < n; ++i) {
    if (bits(ours[i]) != bits(theirs[i])) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "%s: value %zu (block %zu) differs: remat %a (0x%08x), ggml %a (0x%08x)",
                    what.c_str(), i, i / info.block_values, double(ours[i]), bits(ours[i]),
                    double(theirs[i]), bits(theirs[i]));
      FAIL(msg);
    }
  }
  // Not vacuous: the values are mostly not zero and take many distinct values.
  const std::set<uint32_t> distinct(reinterpret_cast<const uint32_t*>(ours.data()),
                                    reinterpret_cast<const uint32_t*>(ours.data()) + n);
  INFO(what << ": " << n << " values bitwise equal, " << distinct.size() << " distinct");
  CHECK(distinct.size() > 8);
  return n;
}

// Rows of `n_per_row` values in eight patterns: normal values of one magnitude (1e-5 .. 1e3), all
// zero, a third zero, all positive, all negative, constant, every value its own magnitude
// (2^-8 .. 2^8), and small values with rare large outliers.
std::vector<float> sample_rows(int64_t rows, int64_t n_per_row, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * n_per_row));
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * n_per_row;
    const float scale = std::pow(10.0f, float(int(rng() % 9) - 5));
    const float constant = normal(rng) * scale;
    for (int64_t i = 0; i < n_per_row; ++i) {
      float& v = row[i];
      switch (r % 8) {
        case 0:
          v = normal(rng) * scale;
          break;
        case 1:
          v = 0.0f;
          break;
        case 2:
          v = rng() % 3 == 0 ? 0.0f : normal(rng) * scale;
          break;
        case 3:
          v = unit(rng) * scale;
          break;
        case 4:
          v = -unit(rng) * scale - scale;
          break;
        case 5:
          v = constant;
          break;
        case 6:
          v = normal(rng) * std::ldexp(1.0f, int(rng() % 17) - 8);
          break;
        default:
          v = rng() % 64 == 0 ? normal(rng) * 100.0f : normal(rng) * 0.01f;
          break;
      }
    }
  }
  return x;
}

}  // namespace

TEST_CASE("gguf blocks: rows quantized by ggml decode as ggml decodes them, bit for bit") {
  const test::GgmlLibrary* ggml = test::ggml_library();
  if (!ggml) return;
  std::mt19937 rng(7);
  for (GgmlType t : test::decodable_types()) {
    const GgmlTypeInfo& info = ggml_type_info(t);
    const int id = int(t);
    REQUIRE_FALSE(ggml->requires_imatrix(id));
    size_t compared = 0;
    // One block a row, three, and rows of 4096 values; the K-quants and 32-value types both get
    // multiples of 256 and of 32.
    for (int64_t n_per_row :
         {int64_t(info.block_values), int64_t(3 * info.block_values), int64_t(4096)}) {
      const int64_t rows = n_per_row == 4096 ? 8 : 24;
      const std::vector<float> x = sample_rows(rows, n_per_row, rng);
      std::vector<float> imatrix(static_cast<size_t>(n_per_row));
      for (float& w : imatrix) w = 0.1f + float(rng() % 1000) / 100.0f;
      // Without and with an importance matrix (which takes the quantizers' other code paths).
      for (const float* weights :
           {static_cast<const float*>(nullptr), std::as_const(imatrix).data()}) {
        std::vector<std::byte> q(ggml_row_bytes(t, uint64_t(rows * n_per_row)));
        const size_t written =
            ggml->quantize_chunk(id, x.data(), q.data(), 0, rows, n_per_row, weights);
        REQUIRE(written == q.size());
        compared +=
            compare_with_ggml(*ggml, t, q,
                              std::string(info.name) + " rows of " + std::to_string(n_per_row) +
                                  (weights ? " with an imatrix" : ""),
                              &x);
      }
    }
    INFO(info.name << ": " << compared << " values from ggml's quantizer, 0 mismatches");
    CHECK(compared >= 20000);
  }
}

TEST_CASE("gguf blocks: random block bytes decode as ggml decodes them, bit for bit") {
  const test::GgmlLibrary* ggml = test::ggml_library();
  if (!ggml) return;
  std::mt19937 rng(11);
  for (GgmlType t : test::decodable_types()) {
    const GgmlTypeInfo& info = ggml_type_info(t);
    if (info.block_values == 1) continue;  // every f16 and bf16 pattern: the next test
    const size_t blocks = 65536 / info.block_values;
    const std::vector<std::byte> bytes = test::random_blocks(t, blocks, rng);
    const size_t n = compare_with_ggml(*ggml, t, bytes, std::string(info.name) + " random blocks");
    INFO(info.name << ": " << n << " values of random blocks, 0 mismatches");
    CHECK(n == 65536);
  }
}

TEST_CASE("gguf blocks: every f16 and bf16 bit pattern widens as ggml widens it") {
  const test::GgmlLibrary* ggml = test::ggml_library();
  if (!ggml) return;
  std::vector<std::byte> all(2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    all[2 * h] = std::byte(h & 0xFF);
    all[2 * h + 1] = std::byte(h >> 8);
  }
  const size_t f16 = compare_with_ggml(*ggml, GgmlType::f16, all, "f16, every pattern");
  const size_t bf16 = compare_with_ggml(*ggml, GgmlType::bf16, all, "bf16, every pattern");
  CHECK(f16 == 65536);
  CHECK(bf16 == 65536);
}

TEST_CASE("gguf types: remat's table agrees with ggml's names, block sizes and type sizes") {
  const test::GgmlLibrary* ggml = test::ggml_library();
  if (!ggml) return;
  for (uint32_t id = 0; id < 256; ++id) {
    const auto ours = ggml_type_info(id);
    if (id >= test::kPinnedGgmlTypeCount) {
      INFO("id " << id << " is past the pinned ggml's types");
      CHECK_FALSE(ours);
      continue;
    }
    const int64_t block_values = ggml->blck_size(int(id));
    INFO("id " << id << ": ggml calls it " << ggml->type_name(int(id)));
    if (block_values == 0) {  // removed from ggml (q4_2, q4_0_4_4, ...): not a type remat knows
      CHECK_FALSE(ours);
      continue;
    }
    if (!ours) continue;  // newer than remat's table (nvfp4, q1_0, ...): refused as unknown
    CHECK(ours->name == std::string(ggml->type_name(int(id))));
    CHECK(ours->block_values == uint64_t(block_values));
    CHECK(ours->block_bytes == ggml->type_size(int(id)));
  }
}

TEST_CASE("gguf blocks: decode throughput per type, remat and ggml", "[.bench]") {
  // ggml's column only where its library was fetched.
  const test::GgmlLibrary* ggml =
      std::filesystem::exists(test::ggml_library_path()) ? test::ggml_library() : nullptr;
  std::mt19937 rng(3);
  const size_t values = size_t(1) << 22;  // 4 Mi values a type
  std::printf("%-6s %14s %14s %14s\n", "type", "remat MB/s in", "remat Mval/s", "ggml Mval/s");
  for (GgmlType t : test::decodable_types()) {
    const GgmlTypeInfo& info = ggml_type_info(t);
    const size_t blocks = values / info.block_values;
    const std::vector<std::byte> bytes = test::random_blocks(t, blocks, rng);
    std::vector<float> out(values);
    auto seconds = [&](auto&& decode) {
      double best = 1e9;
      for (int rep = 0; rep < 5; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        decode();
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return best;
    };
    const double ours = seconds([&] { decode_blocks(t, bytes, out); });
    double theirs = 0;
    if (ggml) {
      if (const auto to_float = ggml->to_float(t))
        theirs = seconds([&] { to_float(bytes.data(), out.data(), int64_t(values)); });
    }
    std::printf("%-6s %14.0f %14.0f %14.0f\n", std::string(info.name).c_str(),
                double(bytes.size()) / ours / 1e6, double(values) / ours / 1e6,
                theirs > 0 ? double(values) / theirs / 1e6 : 0.0);
  }
}
