#include "formats/gguf_types.h"

#include <array>
#include <limits>
#include <stdexcept>
#include <string>

namespace remat {
namespace {

// Block layouts from ggml-common.h: Q4_0 {f16 d; u8 qs[16]}, Q4_1 {f16 d, m; u8 qs[16]},
// Q5_0 {f16 d; u8 qh[4]; u8 qs[16]}, Q5_1 {f16 d, m; u8 qh[4]; u8 qs[16]}, Q8_0 {f16 d;
// i8 qs[32]}, Q8_1 {f16 d, s; i8 qs[32]}; with QK_K = 256: Q2_K {u8 scales[16]; u8 qs[64];
// f16 d, dmin}, Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}, Q4_K {f16 d, dmin;
// u8 scales[12]; u8 qs[128]}, Q5_K {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}, Q6_K
// {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}, Q8_K {f32 d; i8 qs[256]; i16 bsums[16]}.
constexpr std::array kTypes = {
    GgmlTypeInfo{GgmlType::f32, "f32", 1, 4, true},
    GgmlTypeInfo{GgmlType::f16, "f16", 1, 2, true},
    GgmlTypeInfo{GgmlType::q4_0, "q4_0", 32, 18, true},
    GgmlTypeInfo{GgmlType::q4_1, "q4_1", 32, 20, true},
    GgmlTypeInfo{GgmlType::q5_0, "q5_0", 32, 22, true},
    GgmlTypeInfo{GgmlType::q5_1, "q5_1", 32, 24, true},
    GgmlTypeInfo{GgmlType::q8_0, "q8_0", 32, 34, true},
    GgmlTypeInfo{GgmlType::q8_1, "q8_1", 32, 36, false},
    GgmlTypeInfo{GgmlType::q2_k, "q2_K", 256, 84, true},
    GgmlTypeInfo{GgmlType::q3_k, "q3_K", 256, 110, true},
    GgmlTypeInfo{GgmlType::q4_k, "q4_K", 256, 144, true},
    GgmlTypeInfo{GgmlType::q5_k, "q5_K", 256, 176, true},
    GgmlTypeInfo{GgmlType::q6_k, "q6_K", 256, 210, true},
    GgmlTypeInfo{GgmlType::q8_k, "q8_K", 256, 292, false},
    GgmlTypeInfo{GgmlType::iq2_xxs, "iq2_xxs", 256, 66, false},
    GgmlTypeInfo{GgmlType::iq2_xs, "iq2_xs", 256, 74, false},
    GgmlTypeInfo{GgmlType::iq3_xxs, "iq3_xxs", 256, 98, false},
    GgmlTypeInfo{GgmlType::iq1_s, "iq1_s", 256, 50, false},
    GgmlTypeInfo{GgmlType::iq4_nl, "iq4_nl", 32, 18, false},
    GgmlTypeInfo{GgmlType::iq3_s, "iq3_s", 256, 110, false},
    GgmlTypeInfo{GgmlType::iq2_s, "iq2_s", 256, 82, false},
    GgmlTypeInfo{GgmlType::iq4_xs, "iq4_xs", 256, 136, false},
    GgmlTypeInfo{GgmlType::i8, "i8", 1, 1, false},
    GgmlTypeInfo{GgmlType::i16, "i16", 1, 2, false},
    GgmlTypeInfo{GgmlType::i32, "i32", 1, 4, false},
    GgmlTypeInfo{GgmlType::i64, "i64", 1, 8, false},
    GgmlTypeInfo{GgmlType::f64, "f64", 1, 8, false},
    GgmlTypeInfo{GgmlType::iq1_m, "iq1_m", 256, 56, false},
    GgmlTypeInfo{GgmlType::bf16, "bf16", 1, 2, true},
    GgmlTypeInfo{GgmlType::tq1_0, "tq1_0", 256, 54, false},
    GgmlTypeInfo{GgmlType::tq2_0, "tq2_0", 256, 66, false},
    GgmlTypeInfo{GgmlType::mxfp4, "mxfp4", 32, 17, false},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const GgmlTypeInfo& t : kTypes)
    if (t.type == type) return t;
  throw std::logic_error("ggml type " + std::to_string(static_cast<uint32_t>(type)) +
                         " is not in the table");
}

uint64_t ggml_row_bytes(GgmlType type, uint64_t values) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  if (values % t.block_values != 0)
    throw std::invalid_argument(std::to_string(values) + " values are not whole blocks of " +
                                std::string(t.name) + " (" + std::to_string(t.block_values) +
                                " values a block)");
  const uint64_t blocks = values / t.block_values;
  if (blocks > std::numeric_limits<uint64_t>::max() / t.block_bytes)
    throw std::overflow_error(std::to_string(values) + " values of " + std::string(t.name) +
                              " take more than 2^64 bytes");
  return blocks * t.block_bytes;
}

}  // namespace remat
