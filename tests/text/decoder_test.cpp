// tokenizer.json's decoders for character-level BPE, step by step, as Hugging Face's decoders/*.rs
// define them.
#include "text/decoder.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace remat::text;

namespace {

using S = std::vector<std::string>;

Decoder llama2() {
  Decoder d;
  d.add_replace("\u2581", " ");
  d.add_byte_fallback();
  d.add_fuse();
  d.add_strip(" ", 1, 0);
  return d;
}

}  // namespace

TEST_CASE("ByteFallback turns runs of byte tokens into their bytes", "[text]") {
  Decoder d;
  d.add_byte_fallback();
  CHECK(d.decode(S{"<0x48>", "<0x69>", "!"}) == "Hi!");
  CHECK(d.decode(S{"a", "<0xE4>", "<0xB8>", "<0xAD>", "b"}) == "a\u4e2db");
  // Not byte tokens: a wrong length, no hex.
  CHECK(d.decode(S{"<0x4>", "<0xZZ>", "<0x41"}) == "<0x4><0xZZ><0x41");
  // An invalid run keeps its bytes (Hugging Face writes U+FFFD per byte).
  CHECK(d.decode(S{"<0xE4>", "<0xB8>", "x"}) == "\xE4\xB8x");
}

TEST_CASE("Llama 2's chain: Replace, ByteFallback, Fuse, Strip one leading space", "[text]") {
  CHECK(llama2().decode(S{"\u2581Hello", "\u2581world", "<0x21>"}) == "Hello world!");
  CHECK(llama2().decode(S{"\u2581\u2581two"}) == " two");
  CHECK(llama2().decode(S{}) == "");
}

TEST_CASE("Strip cuts up to start leading and stop trailing characters of each token", "[text]") {
  Decoder d;
  d.add_strip("\u2581", 2, 1);
  d.set_join_with_spaces(true);
  CHECK(d.decode(S{"\u2581\u2581\u2581a\u2581\u2581", "b", "\u2581"}) == "\u2581a\u2581 b ");
}

TEST_CASE("Metaspace drops the replacement in the first token and spaces the others", "[text]") {
  Decoder d;
  d.add_metaspace("\u2581", true);
  CHECK(d.decode(S{"\u2581Hey", "\u2581friend!"}) == "Hey friend!");
  // Every replacement of the first token goes, as Hugging Face's decoder has it.
  CHECK(d.decode(S{"\u2581\u2581a\u2581", "\u2581b"}) == "a b");
  Decoder never;
  never.add_metaspace("\u2581", false);
  CHECK(never.decode(S{"\u2581Hey", "\u2581friend!"}) == " Hey friend!");
}

TEST_CASE("without a decoder step tokens are joined, with spaces when asked", "[text]") {
  Decoder d;
  CHECK(d.decode(S{"a", "b"}) == "ab");
  d.set_join_with_spaces(true);
  CHECK(d.decode(S{"a", "b"}) == "a b");
  CHECK_THROWS_AS(d.add_replace("", "x"), std::invalid_argument);
  CHECK_THROWS_AS(d.add_strip("ab", 1, 0), std::invalid_argument);
}

TEST_CASE("decode says where each token's text begins", "[text]") {
  std::vector<std::size_t> starts;
  // Gemma's chain: a byte run is one piece, each byte token begins at its byte.
  Decoder gemma;
  gemma.add_replace("\u2581", " ");
  gemma.add_byte_fallback();
  gemma.add_fuse();
  CHECK(gemma.decode(S{"\u2581Hi", "<0xE4>", "<0xB8>", "<0xAD>", "\u2581\u2581x"}, &starts) ==
        " Hi\u4e2d  x");
  CHECK(starts == std::vector<std::size_t>{0, 3, 4, 5, 6});
  // Llama 2's Strip: a token whose text is cut away begins where the next one does.
  CHECK(llama2().decode(S{"\u2581", "\u2581a", "b"}, &starts) == " ab");
  CHECK(starts == std::vector<std::size_t>{0, 0, 2});
  Decoder metaspace;
  metaspace.add_metaspace("\u2581", true);
  metaspace.set_join_with_spaces(true);
  CHECK(metaspace.decode(S{"\u2581a", "\u2581b"}, &starts) == "a  b");
  CHECK(starts == std::vector<std::size_t>{0, 2});
}
