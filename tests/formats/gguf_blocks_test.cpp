// GGUF block decoding without ggml: hand-made blocks of every type decoded to values worked out
// by hand from the layouts in formats/gguf_blocks.h, the size and type refusals, and the
// per-value form (decode_block_value) against the bulk one. gguf_blocks_ggml_test.cpp compares
// both with ggml's own dequantization.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_blocks.h"
#include "tests/formats/gguf_block_samples.h"

using namespace remat;

namespace {

struct Block {
  std::vector<std::byte> bytes;

  explicit Block(GgmlType t) : bytes(ggml_type_info(t).block_bytes) {}
  Block& u8(uint32_t offset, uint8_t v) {
    bytes.at(offset) = std::byte(v);
    return *this;
  }
  Block& f16(uint32_t offset, uint16_t h) {
    return u8(offset, uint8_t(h & 0xFF)).u8(offset + 1, uint8_t(h >> 8));
  }
};

std::vector<float> decode(GgmlType t, const std::vector<std::byte>& bytes) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  std::vector<float> out(bytes.size() / info.block_bytes * info.block_values);
  decode_blocks(t, bytes, out);
  return out;
}

// Decodes the one block both ways and compares each value with `expected` (== : ±0 alike).
void check_block(GgmlType t, const Block& block, const std::vector<float>& expected) {
  const std::vector<float> got = decode(t, block.bytes);
  REQUIRE(got.size() == expected.size());
  for (uint32_t e = 0; e < got.size(); ++e) {
    INFO(ggml_type_info(t).name << " value " << e);
    REQUIRE(got[e] == expected[e]);
    REQUIRE(decode_block_value(t, block.bytes, e) == expected[e]);
  }
}

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

}  // namespace

TEST_CASE("gguf blocks: f32, f16 and bf16 values decode exactly, NaNs as ggml widens them") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::byte> f32(5 * 4);
  const uint32_t f32_bits[] = {bits(1.5f), bits(-0.0f), bits(-inf), 0x7FA00001u, 0x00000001u};
  std::memcpy(f32.data(), f32_bits, sizeof f32_bits);  // little-endian host
  const std::vector<float> a = decode(GgmlType::f32, f32);
  for (int i = 0; i < 5; ++i) CHECK(bits(a[i]) == f32_bits[i]);  // copied bit for bit

  // 1.0, -2.5, 2^-24 (smallest subnormal), 65504 (largest), -inf, a signalling and a quiet NaN.
  const uint16_t f16[] = {0x3C00, 0xC100, 0x0001, 0x7BFF, 0xFC00, 0x7C01, 0xFE00};
  std::vector<std::byte> f16_bytes(sizeof f16);
  std::memcpy(f16_bytes.data(), f16, sizeof f16);
  const std::vector<float> h = decode(GgmlType::f16, f16_bytes);
  CHECK(h[0] == 1.0f);
  CHECK(h[1] == -2.5f);
  CHECK(h[2] == std::ldexp(1.0f, -24));
  CHECK(h[3] == 65504.0f);
  CHECK(h[4] == -inf);
  CHECK(bits(h[5]) == 0x7FC02000u);  // signalling NaN comes out quiet, payload kept
  CHECK(bits(h[6]) == 0xFFC00000u);
  CHECK(bits(gguf_f16_to_float(0x7C01)) == 0x7FC02000u);
  // Every other pattern as base/half_float.h widens it: the same but for the quiet bit of NaNs.
  for (uint32_t p = 0; p < 0x10000; ++p) {
    const uint32_t base = bits(f16_to_float(uint16_t(p)));
    INFO("f16 " << p);
    REQUIRE(bits(gguf_f16_to_float(uint16_t(p))) ==
            (std::isnan(f16_to_float(uint16_t(p))) ? base | 0x00400000u : base));
  }

  // 1.0, -2.5, a bf16 subnormal, and a signalling NaN, which bf16 keeps as it is.
  const uint16_t bf16[] = {0x3F80, 0xC020, 0x0001, 0x7F81};
  std::vector<std::byte> bf16_bytes(sizeof bf16);
  std::memcpy(bf16_bytes.data(), bf16, sizeof bf16);
  const std::vector<float> b = decode(GgmlType::bf16, bf16_bytes);
  CHECK(b[0] == 1.0f);
  CHECK(b[1] == -2.5f);
  CHECK(bits(b[2]) == 0x00010000u);
  CHECK(bits(b[3]) == 0x7F810000u);
}

TEST_CASE("gguf blocks: hand-made q8_0, q4_0, q4_1, q5_0 and q5_1 blocks decode as worked out") {
  SECTION("q8_0: qs[e] * d") {
    Block b(GgmlType::q8_0);
    b.f16(0, 0x3800).u8(2, 0x80).u8(3, 0x7F).u8(5, 0x03);  // d = 0.5; qs = -128, 127, 0, 3
    std::vector<float> want(32, 0.0f);
    want[0] = -64.0f, want[1] = 63.5f, want[3] = 1.5f;
    check_block(GgmlType::q8_0, b, want);
  }
  SECTION("q4_0: (q - 8) * d, low nibbles first") {
    Block b(GgmlType::q4_0);
    b.f16(0, 0x4000);  // d = 2
    for (uint32_t j = 0; j < 16; ++j) b.u8(2 + j, 0x88);
    b.u8(2, 0xF0).u8(3, 0x98);  // value 0: 0, value 16: 15; value 1: 8, value 17: 9
    std::vector<float> want(32, 0.0f);
    want[0] = -16.0f, want[16] = 14.0f, want[17] = 2.0f;
    check_block(GgmlType::q4_0, b, want);
  }
  SECTION("q4_1: q * d + m") {
    Block b(GgmlType::q4_1);
    b.f16(0, 0x3800).f16(2, 0xBC00).u8(4, 0x3A);  // d = 0.5, m = -1; value 0: 10, value 16: 3
    std::vector<float> want(32, -1.0f);
    want[0] = 4.0f, want[16] = 0.5f;
    check_block(GgmlType::q4_1, b, want);
  }
  SECTION("q5_0: (q - 16) * d, bit e of qh as bit 4 of value e") {
    Block b(GgmlType::q5_0);
    b.f16(0, 0x3C00);           // d = 1
    b.u8(2, 0x01).u8(4, 0x02);  // qh bits 0 and 17
    b.u8(6, 0x21).u8(7, 0x43);  // qs[0], qs[1]
    std::vector<float> want(32, -16.0f);
    want[0] = 1.0f;     // 1 | 16
    want[16] = -14.0f;  // 2
    want[1] = -13.0f;   // 3
    want[17] = 4.0f;    // 4 | 16
    check_block(GgmlType::q5_0, b, want);
  }
  SECTION("q5_1: q * d + m") {
    Block b(GgmlType::q5_1);
    b.f16(0, 0x4000).f16(2, 0x3C00);     // d = 2, m = 1
    b.u8(4 + 3, 0x80).u8(8 + 15, 0x70);  // qh bit 31; qs[15]: value 15: 0, value 31: 7 | 16
    std::vector<float> want(32, 1.0f);
    want[31] = 47.0f;
    check_block(GgmlType::q5_1, b, want);
  }
}

TEST_CASE("gguf blocks: hand-made q2_K ... q6_K blocks decode as worked out") {
  SECTION("q2_K: (d * sc) * q - dmin * m, sc and m the nibbles of scales[e/16]") {
    Block b(GgmlType::q2_k);
    b.f16(80, 0x3C00).f16(82, 0x3800);  // d = 1, dmin = 0.5
    b.u8(0, 0x21).u8(5, 0x13).u8(12, 0xF0);
    b.u8(16 + 0, 0x03);   // value 0: q = 3
    b.u8(16 + 21, 0x20);  // value 85 (half 0, shift 4, byte 21): q = 2
    std::vector<float> want(256, 0.0f);
    for (int e = 0; e < 16; ++e) want[e] = -1.0f;  // sc 1, m 2
    want[0] = 2.0f;
    for (int e = 80; e < 96; ++e) want[e] = -0.5f;  // sc 3, m 1
    want[85] = 5.5f;
    for (int e = 192; e < 208; ++e) want[e] = -7.5f;  // sc 0, m 15
    check_block(GgmlType::q2_k, b, want);
  }
  SECTION("q3_K: (d * (sc - 32)) * (q - 4 unless its hmask bit is set)") {
    Block b(GgmlType::q3_k);
    b.f16(108, 0x3800);                   // d = 0.5
    b.u8(96 + 0, 0x01).u8(96 + 8, 0x02);  // sub-block 0: 1 | 2 << 4 = 33, sc = 1
    b.u8(96 + 5, 0x20);                   // sub-block 13: low 2, high 0 (scales[9] >> 6): sc = -30
    b.u8(32 + 0, 0x03).u8(0, 0x01);       // value 0: q = 3, high bit set
    b.u8(32 + 50, 0x10).u8(18, 0x40);     // value 210 (g 6, byte 18): q = 1, high bit set
    std::vector<float> want(256, 64.0f);  // scale 0 - 32, q 0 - 4
    for (int e = 0; e < 16; ++e) want[e] = -2.0f;
    want[0] = 1.5f;
    for (int e = 208; e < 224; ++e) want[e] = 60.0f;
    want[210] = -15.0f;
    check_block(GgmlType::q3_k, b, want);
    const auto scales = std::span<const std::byte, 12>(b.bytes.data() + 96, 12);
    CHECK(q3k_scale(scales, 0) == 33);
    CHECK(q3k_scale(scales, 13) == 2);
    CHECK(q3k_scale(scales, 8) == 0);
  }
  SECTION("q4_K: (d * sc) * q - dmin * m, 6-bit sc and m from the 12 scale bytes") {
    Block b(GgmlType::q4_k);
    b.f16(0, 0x3C00).f16(2, 0x3800);  // d = 1, dmin = 0.5
    b.u8(4 + 0, 3).u8(4 + 4, 2);      // sub-block 0: sc 3, m 2
    // Sub-block 5: sc = 0x1 | (scales[1] >> 6) << 4 = 17, m = 0x1 | (scales[5] >> 6) << 4 = 33.
    b.u8(4 + 9, 0x11).u8(4 + 1, 0x40).u8(4 + 5, 0x80);
    b.u8(16 + 0, 0x05);   // value 0: q = 5
    b.u8(16 + 65, 0x90);  // value 161 (chunk 2, high nibble of byte 1): q = 9
    std::vector<float> want(256, 0.0f);
    for (int e = 0; e < 32; ++e) want[e] = -1.0f;
    want[0] = 14.0f;
    for (int e = 160; e < 192; ++e) want[e] = -16.5f;
    want[161] = 136.5f;
    check_block(GgmlType::q4_k, b, want);
    const auto scales = std::span<const std::byte, 12>(b.bytes.data() + 4, 12);
    CHECK(q4k_scale_min(scales, 5).scale == 17);
    CHECK(q4k_scale_min(scales, 5).min == 33);
    CHECK(q4k_scale_min(scales, 1).scale == 0);  // the top bits belong to sub-block 5
    CHECK(q4k_scale_min(scales, 1).min == 0);
  }
  SECTION("q5_K: as q4_K with bit e/32 of qh[e%32] as bit 4 of q") {
    Block b(GgmlType::q5_k);
    b.f16(0, 0x3400).f16(2, 0x3C00);         // d = 0.25, dmin = 1
    b.u8(4 + 0, 4).u8(4 + 4, 1);             // sub-block 0: sc 4, m 1
    b.u8(4 + 11, 0x0F).u8(4 + 3, 0xC0);      // sub-block 7: sc 15 | 3 << 4 = 63, m 0
    b.u8(48 + 0, 0x07).u8(16 + 0, 0x01);     // value 0: 7 + 16
    b.u8(48 + 127, 0xF0).u8(16 + 31, 0x80);  // value 255: 15 + 16
    std::vector<float> want(256, 0.0f);
    for (int e = 0; e < 32; ++e) want[e] = -1.0f;
    want[0] = 22.0f;
    want[255] = 488.25f;
    check_block(GgmlType::q5_k, b, want);
  }
  SECTION("q6_K: (d * scales[e/16]) * (q - 32)") {
    Block b(GgmlType::q6_k);
    b.f16(208, 0x3800);                     // d = 0.5
    b.u8(192 + 0, 0xFE).u8(192 + 15, 100);  // scales -2 and 100
    b.u8(0, 0x0A).u8(128 + 0, 0x02);        // value 0: 10 | 2 << 4 = 42
    b.u8(127, 0xF0).u8(128 + 63, 0xC0);     // value 255: 15 | 3 << 4 = 63
    std::vector<float> want(256, 0.0f);
    for (int e = 0; e < 16; ++e) want[e] = 32.0f;  // -2 * -32 / 2
    want[0] = -10.0f;
    for (int e = 240; e < 256; ++e) want[e] = -1600.0f;
    want[255] = 1550.0f;
    check_block(GgmlType::q6_k, b, want);
  }
}

TEST_CASE("gguf blocks: decode_blocks refuses a size mismatch and a type it does not decode") {
  std::vector<float> out(256);
  const std::vector<std::byte> block(144);
  CHECK_NOTHROW(decode_blocks(GgmlType::q4_k, block, out));
  CHECK_THROWS_WITH(decode_blocks(GgmlType::q4_k, block, std::span(out).first(100)),
                    "decode_blocks: 100 values are not whole blocks of q4_K (256 values a block)");
  CHECK_THROWS_WITH(decode_blocks(GgmlType::q4_k, std::span(block).first(143), out),
                    "decode_blocks: 256 q4_K values take 144 bytes, got 143");
  CHECK_THROWS_WITH(decode_blocks(GgmlType::q8_1, {}, {}),
                    Catch::StartsWith("decode_blocks: remat does not decode ggml type q8_1 (it "
                                      "decodes f32, f16, bf16, q8_0,") &&
                        Catch::EndsWith("q6_K)"));
  CHECK_THROWS_WITH(decode_blocks(GgmlType::iq2_xxs, {}, {}), Catch::Contains("type iq2_xxs"));
  CHECK_THROWS_WITH(decode_blocks(GgmlType(4), {}, {}), "decode_blocks: 4 is not a ggml type id");
  CHECK_THROWS_WITH(decode_block_value(GgmlType::q4_k, block, 256),
                    "decode_block_value: value 256 of a q4_K block of 256");
  CHECK_THROWS_WITH(decode_block_value(GgmlType::q4_k, std::span(block).first(34), 0),
                    "decode_block_value: a q4_K block is 144 bytes, got 34");

  // The table's `supported` flag says exactly which types decode_blocks takes.
  for (uint32_t id = 0; id < 64; ++id) {
    const auto info = ggml_type_info(id);
    if (!info) continue;
    INFO(info->name);
    if (info->supported)
      CHECK_NOTHROW(decode_blocks(info->type, {}, {}));
    else
      CHECK_THROWS_AS(decode_blocks(info->type, {}, {}), std::invalid_argument);
  }
}

TEST_CASE("gguf blocks: decode_block_value gives each value decode_blocks gives, bit for bit") {
  std::mt19937 rng(20240601);
  for (GgmlType t : test::decodable_types()) {
    const GgmlTypeInfo& info = ggml_type_info(t);
    const size_t count = info.block_values == 1 ? 4096 : 64;
    const std::vector<std::byte> bytes = test::random_blocks(t, count, rng);
    const std::vector<float> all = decode(t, bytes);
    for (size_t block = 0; block < count; ++block) {
      const auto one = std::span(bytes).subspan(block * info.block_bytes, info.block_bytes);
      for (uint32_t e = 0; e < info.block_values; ++e) {
        const float v = decode_block_value(t, one, e);
        const float bulk = all[block * info.block_values + e];
        if (bits(v) != bits(bulk)) {
          char msg[200];
          std::snprintf(msg, sizeof msg,
                        "%s block %zu value %u: decode_block_value %a (0x%08x), decode_blocks %a "
                        "(0x%08x)",
                        std::string(info.name).c_str(), block, e, double(v), bits(v), double(bulk),
                        bits(bulk));
          FAIL(msg);
        }
      }
    }
  }
}
