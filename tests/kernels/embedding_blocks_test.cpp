// The token embedding of a table kept in ggml blocks (embedding_blocks.comp) against the CPU:
// each row of x is decode_blocks of the token's row (formats/gguf_blocks.h, ggml's values bit for
// bit), for a 32-value and a 256-value type, with the table bound whole and in pieces of whole
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
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

Buffer upload_words(const std::vector<std::byte>& bytes) {
  std::vector<uint8_t> words((bytes.size() + 15) / 16 * 16, 0xA5);
  for (std::size_t i = 0; i < bytes.size(); ++i) words[i] = uint8_t(bytes[i]);
  return test::upload_buffer(words, "table");
}

void check_type(GgmlType t, uint64_t max_binding_bytes, bool pieces) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  const uint32_t V = 150, C = 2 * info.block_values, rows = 23;
  std::mt19937 rng(11);
  const std::vector<std::byte> table =
      test::random_blocks(t, std::size_t(V) * C / info.block_values, rng);
  std::vector<float> decoded(std::size_t(V) * C);
  decode_blocks(t, table, decoded);
  std::vector<uint32_t> tokens = test::random_indices(rows, 3, V);
  tokens[5] = V;  // past the vocabulary
  tokens[6] = V - 1;
  tokens[7] = 0;
  Buffer tb = upload_words(table);
  Buffer tok = test::upload_buffer(tokens, "tokens");
  Buffer x = test::garbage_buffer<float>(std::size_t(rows) * C, "x");
  DeviceQuirks q = test::device().plan().quirks;
  q.max_binding_bytes = max_binding_bytes;
  const auto ds = kernels::embedding_blocks_forward(q, {rows, C, V, uint32_t(t)}, tok.whole(),
                                                    tb.whole(), x.whole());
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
      const float w = decoded[std::size_t(tokens[r]) * C + c];
      INFO("row " << r << " column " << c);
      REQUIRE(std::bit_cast<uint32_t>(g) == std::bit_cast<uint32_t>(w));
    }
}

}  // namespace

TEST_CASE(
    "embedding_blocks: each row is the token's decoded row, bit for bit, whole or in pieces") {
  for (GgmlType t : {GgmlType::q8_0, GgmlType::q4_k}) {
    DYNAMIC_SECTION(ggml_type_info(t).name) {
      check_type(t, 0, false);
      // Pieces of whole rows starting on 256-byte boundaries, under 8 KiB each.
      check_type(t, 8192, true);
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
}
