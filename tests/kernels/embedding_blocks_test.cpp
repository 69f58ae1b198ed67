// The token embedding of a table kept in ggml blocks (embedding_blocks.comp) against the CPU
// references (tests/reference/embedding.h) on the decoded table: each row of x is decode_blocks of
// the token's row (formats/gguf_blocks.h, ggml's values bit for bit), times Gemma's scale
// sqrt(C), or plus GPT-2's position row (position r % T, or each token's own position in packed
// rows), for a 32-value and a 256-value type, with the table bound whole and in pieces of whole
// rows; tokens past the vocabulary give NaN rows. Also the dispatch's checks.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf_blocks.h"
#include "formats/gguf_types.h"
#include "runtime/kernels/embedding_blocks.h"
#include "tests/formats/gguf_block_samples.h"
#include "tests/reference/embedding.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

Buffer upload_words(const std::vector<std::byte>& bytes) {
  std::vector<uint8_t> words((bytes.size() + 15) / 16 * 16, 0xA5);
  for (std::size_t i = 0; i < bytes.size(); ++i) words[i] = uint8_t(bytes[i]);
  return test::upload_buffer(words, "table");
}

// What the gather adds to or multiplies the decoded rows by.
enum class Mode { plain, scaled, positions, packed };

void check_type(GgmlType t, uint64_t max_binding_bytes, bool pieces, Mode mode) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  const uint32_t V = 150, C = 2 * info.block_values, rows = 24, T = 8;
  std::mt19937 rng(11);
  const std::vector<std::byte> table =
      test::random_blocks(t, std::size_t(V) * C / info.block_values, rng);
  std::vector<float> decoded(std::size_t(V) * C);
  decode_blocks(t, table, decoded);
  std::vector<uint32_t> tokens = test::random_indices(rows, 3, V);
  tokens[5] = V;  // past the vocabulary
  tokens[6] = V - 1;
  tokens[7] = 0;
  const std::vector<float> wpe = test::random_floats(std::size_t(T) * C, 4, -1.0f, 1.0f);
  // Packed rows: examples of 3, 5 and 4 tokens, then 4 and 8, each restarting at position 0.
  std::vector<uint32_t> at(rows);
  for (uint32_t r = 0; r < rows; ++r) at[r] = r % T;
  if (mode == Mode::packed)
    at = {0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7};
  const float scale = mode == Mode::scaled ? std::sqrt(float(C)) : 1.0f;
  const bool with_wpe = mode == Mode::positions || mode == Mode::packed;
  // The references on the decoded table; rows of tokens past the vocabulary are checked apart.
  std::vector<uint32_t> in_vocab = tokens;
  for (uint32_t& tok : in_vocab) tok = tok >= V ? 0 : tok;
  std::vector<float> want;
  if (with_wpe)
    ref::embedding_forward_at(want, in_vocab, at, decoded, wpe, C);
  else
    ref::token_embedding_forward(want, in_vocab, decoded, C, scale);
  Buffer tb = upload_words(table);
  Buffer tok = test::upload_buffer(tokens, "tokens");
  Buffer wpe_b = test::upload_buffer(wpe, "wpe");
  Buffer pos_b = test::upload_buffer(at, "positions");
  Buffer x = test::garbage_buffer<float>(std::size_t(rows) * C, "x");
  DeviceQuirks q = test::device().plan().quirks;
  q.max_binding_bytes = max_binding_bytes;
  const auto ds = kernels::embedding_blocks_forward(
      q, {rows, C, V, uint32_t(t), T, scale}, tok.whole(), tb.whole(), x.whole(),
      with_wpe ? wpe_b.whole() : BufferSlice{},
      mode == Mode::packed ? pos_b.whole() : BufferSlice{});
  CHECK((ds.size() > 1) == pieces);
  test::run_once(ds);
  const auto got = test::read<float>(x, std::size_t(rows) * C);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < C; ++c) {
      const float g = got[std::size_t(r) * C + c];
      if (tokens[r] >= V) {
        REQUIRE(std::isnan(g));
        continue;
      }
      const float w = want[std::size_t(r) * C + c];
      INFO("row " << r << " column " << c);
      REQUIRE(std::bit_cast<uint32_t>(g) == std::bit_cast<uint32_t>(w));
    }
}

}  // namespace

TEST_CASE(
    "embedding_blocks: each row is the token's decoded row, bit for bit, whole or in pieces") {
  for (GgmlType t : {GgmlType::q8_0, GgmlType::q4_k}) {
    DYNAMIC_SECTION(ggml_type_info(t).name) {
      check_type(t, 0, false, Mode::plain);
      // Pieces of whole rows starting on 256-byte boundaries, under 8 KiB each.
      check_type(t, 8192, true, Mode::plain);
    }
  }
}

TEST_CASE(
    "embedding_blocks: Gemma's scale and GPT-2's position rows give the float gather's bits") {
  for (GgmlType t : {GgmlType::q8_0, GgmlType::q4_k}) {
    for (Mode mode : {Mode::scaled, Mode::positions, Mode::packed}) {
      DYNAMIC_SECTION(ggml_type_info(t).name << " mode " << int(mode)) {
        check_type(t, 0, false, mode);
        check_type(t, 8192, true, mode);
      }
    }
  }
}

TEST_CASE("embedding_blocks: the dispatch refuses what it cannot decode") {
  Buffer b = test::garbage_buffer<float>(1024, "b");
  const DeviceQuirks q = test::device().plan().quirks;
  CHECK_THROWS_WITH(kernels::embedding_blocks_forward(q, {4, 64, 2, uint32_t(GgmlType::f32)},
                                                      b.whole(), b.whole(), b.whole()),
                    Catch::Contains("not a block format"));
  CHECK_THROWS_WITH(kernels::embedding_blocks_forward(q, {4, 48, 2, uint32_t(GgmlType::q8_0)},
                                                      b.whole(), b.whole(), b.whole()),
                    Catch::Contains("not whole blocks"));
  CHECK_THROWS_WITH(kernels::embedding_blocks_forward(q, {4, 64, 1000, uint32_t(GgmlType::q8_0)},
                                                      b.whole(), b.whole(), b.whole()),
                    Catch::Contains("shorter"));
  // A position table of fewer than T rows.
  CHECK_THROWS_WITH(
      kernels::embedding_blocks_forward(q, {4, 64, 2, uint32_t(GgmlType::q8_0), 8}, b.whole(),
                                        b.whole(), b.whole(), b.slice(0, 64 * 4)),
      Catch::Contains("shorter"));
}
