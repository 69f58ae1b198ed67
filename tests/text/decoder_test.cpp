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
