// The tensor types of GGUF files (ggml's `enum ggml_type`): each type's id as stored in a file,
// its name as ggml prints it, and its block layout (values per block, bytes per block). The ids
// and layouts are ggml's file format, fixed by ggml.h and ggml-common.h; a test compares this
// table with the ggml library's own ggml_type_size and ggml_blck_size for every id.
//
// remat reads the types llama.cpp's quantizer writes for its Q2_K ... Q8_0 presets (including the
// _S/_M/_L mixes and the fallbacks for rows not divisible by 256) and the float types; any other
// type is named in the refusal (GgmlType::supported is false).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace remat {

enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
};

// One type's facts.
struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // as ggml_type_name prints it: "q4_K", "bf16", ...
  uint32_t block_values;  // values per block (ggml_blck_size): 1, 32 or 256
  uint32_t block_bytes;   // bytes per block (ggml_type_size)
  bool supported;         // remat decodes it (formats/gguf_blocks.h)
};

// The type stored as `id` in a file; nullopt for an id ggml does not define (or has removed).
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
const GgmlTypeInfo& ggml_type_info(GgmlType t);

// Bytes of `values` values of type `t` (a whole number of blocks); std::invalid_argument when
// `values` is not a multiple of the block size.
uint64_t ggml_row_bytes(GgmlType t, uint64_t values);

}  // namespace remat
