// Character-level BPE as Gemma 3, Llama 2 and Mistral publish it in tokenizer.json (byte_fallback,
// unk, Replace/Prepend normalizers, Split and Metaspace pre-tokenizers, Replace/ByteFallback/Fuse/
// Strip/Metaspace decoders): small files of that shape encode and decode as Hugging Face's
// tokenizers.js does, and a planted change makes the ids differ.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/text/corpus.h"
#include "tests/text/piece_vocab.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/tokenizer_files.h"

using namespace remat;
using text::TokenId;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kGemmaSpecials = {"<pad>",           "<eos>",         "<bos>",
                                                 "<unk>",           "<mask>",        "[@BOS@]",
                                                 "<start_of_turn>", "<end_of_turn>", "<unused0>"};
const std::vector<std::string> kLlamaSpecials = {"<unk>", "<s>", "</s>"};

// Pieces as SentencePiece learns them: words with their leading "\u2581", parts of words.
// clang-format off
const std::vector<std::string> kWords = {
    "\u2581the", "\u2581The", "he", "in", "ing", "\u2581a", "\u2581and", "\u2581of", "\u2581to",
    "\u2581is", "\u2581hello", "\u2581world", "er", "re", "on", "\u2581you", "\u2581license",
    "\u2581software", "\u2581program", "ion", "tion", "\u2581free", "\u2581General",
    "\u2581Public", "\u2581License", "\u2581copy", "\u2581user", "\u2581model",
    "\u4e2d\u6587", "\u2581\u4e2d", "caf\u00e9", ".\n", "\n\n", "\t\t"};
// clang-format on
// Runs of "\u2581", which Gemma has as tokens. The Metaspace variants leave them out: with split,
// Hugging Face cannot form them and tokenizers.js, which does not split, could; and its Metaspace
// decoder drops one leading space of the first token where Hugging Face's drops every
// replacement in it (text/decoder.h follows Hugging Face).
const std::vector<std::string> kSpaceRuns = {"\u2581\u2581", "\u2581\u2581\u2581\u2581",
                                             "\u2581\u2581\u2581\u2581\u2581\u2581\u2581\u2581"};

constexpr const char* kReplaceSpace =
    R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})";
constexpr const char* kGemmaDecoder =
    R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
    "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]})";
constexpr const char* kLlamaDecoder =
    R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
    "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";
constexpr const char* kFallback = R"(, "fuse_unk": true, "byte_fallback": true)";

struct Variant {
  std::string name, json;
  TokenId bos;  // what the post-processor puts first
};

std::vector<Variant> variants() {
  auto with_runs = kWords;
  with_runs.insert(with_runs.end(), kSpaceRuns.begin(), kSpaceRuns.end());
  const test::PieceVocab gemma(kGemmaSpecials, with_runs), llama(kLlamaSpecials, with_runs),
      split(kLlamaSpecials, kWords);
  // Whitespace runs as user-defined pieces: "\u2581\u2581" matched after the normalizer made it,
  // "\n\n" in the text as given.
  test::PieceVocab added(kGemmaSpecials, with_runs);
  added.add_added("\u2581\u2581", true, false);
  added.add_added("\n\n", false, false);
  const std::string metaspace_first =
      R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})";
  const std::string metaspace_always =
      R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true})";
  return {
      // Gemma 3: Replace " " -> "\u2581", then a Split on " " that finds none left.
      {"gemma3",
       gemma.json(kReplaceSpace,
                  R"({"type": "Split", "pattern": {"String": " "},
                                "behavior": "MergedWithPrevious", "invert": false})",
                  kGemmaDecoder, kFallback, true, 2),
       2},
      {"gemma-no-pre", gemma.json(kReplaceSpace, "null", kGemmaDecoder, kFallback, true, 2), 2},
      {"gemma-added", added.json(kReplaceSpace, "null", kGemmaDecoder, kFallback, true, 2), 2},
      // Llama 2 (legacy): Prepend "\u2581" and Replace; Strip takes the first space back.
      {"llama2",
       llama.json(R"({"type": "Sequence", "normalizers": [{"type": "Prepend",
                               "prepend": "\u2581"}, )" +
                      std::string(kReplaceSpace) + "]}",
                  "null", kLlamaDecoder, kFallback, false, 1),
       1},
      // Newer conversions: Metaspace instead of a normalizer.
      {"metaspace-first", split.json("null", metaspace_first, metaspace_first, kFallback, true, 1),
       1},
      {"metaspace-split",
       split.json("null", metaspace_always, metaspace_always, kFallback, true, 1), 1},
      // Split before Metaspace: tokenizers.js implements Isolated and, for a Regex, Removed (its
      // String Removed keeps the delimiters, and its Metaspace "first" prepends to every piece of
      // the first text, where Hugging Face prepends to the piece at the text's start only).
      {"split-isolated",
       split.json("null",
                  R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern":
                  {"String": "\n"}, "behavior": "Isolated", "invert": false}, )" +
                      std::string(metaspace_always) + "]}",
                  metaspace_always, kFallback, true, 1),
       1},
      {"split-removed",
       gemma.json(kReplaceSpace,
                  R"({"type": "Split", "pattern": {"Regex": "\n+"}, "behavior": "Removed",
                      "invert": false})",
                  kGemmaDecoder, kFallback, true, 2),
       2},
      // No byte fallback: unknown characters are <unk>, one each (unfused).
      {"unk",
       gemma.json(kReplaceSpace, "null", kGemmaDecoder,
                  R"(, "fuse_unk": false, "byte_fallback": false)", true, 2),
       2},
  };
}

std::vector<test::CorpusText> texts() {
  std::vector<test::CorpusText> out = {
      {"ascii", "Hello world, the quick brown fox jumps over the lazy dog. The model is free."},
      {"spaces", "a  b   c    d     e         f"},
      {"leading", "   leading spaces"},
      {"leading-one", " one leading space"},
      {"trailing", "trailing spaces   "},
      {"only-spaces", "     "},
      {"newlines", "line one\nline two\n\n\nthree\r\n.\n"},
      {"tabs", "\tindented\t\ttwice\t"},
      {"s-emoji",
       "I like \xF0\x9F\xA4\x96 and \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD and "
       "\xF0\x9F\x98\x80\xF0\x9F\x98\x80"},
      {"cjk",
       "\xE4\xB8\xAD\xE6\x96\x87 \xE4\xB8\xAD\xE5\x9B\xBD \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
       "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"},
      {"accents", "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9"},
      {"unknown-ascii", "Quiz @home ~tilde `tick` QQ@@"},
      {"replacement-char",
       "a\xE2\x96\x81"
       "b \xE2\x96\x81 c\xE2\x96\x81\xE2\x96\x81"},
      {"chat", "<bos><start_of_turn>user\nHello world<end_of_turn>\n<start_of_turn>model\n"},
      {"specials", "say <eos> twice <eos><eos> end<s> </s>x<unk>"},
      {"special-first", "<start_of_turn> after"},
  };
  for (auto& c : test::license_corpus()) out.push_back(std::move(c));
  for (auto& c : test::javascript_safe(test::generated_corpus()))
    if (!c.bytes.empty()) out.push_back(std::move(c));
  return out;
}

std::vector<TokenId> read_ids(const fs::path& p) {
  std::ifstream in(p);
  std::vector<TokenId> ids;
  for (uint64_t id; in >> id;) ids.push_back(TokenId(id));
  return ids;
}

// Runs tokenizers.js over `corpus` with <suffix>.json; its outputs lie beside the texts.
void run_reference(const test::TempFolder& d, const std::vector<test::CorpusText>& corpus,
                   const std::string& suffix) {
  std::ofstream list(d.path() / "list");
  for (const auto& c : corpus) list << d.write("texts/" + c.name, c.bytes).string() << "\n";
  list.close();
  const auto run = test::run_command(
      "node '" REMAT_SOURCE_DIR "/tests/text/hf_reference.cjs' '" + test::npm_modules().string() +
      "' " + d.quoted(suffix + ".json") + " " + suffix + " " + d.quoted("list") + " decode");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
}

bool have_reference() {
  if (!test::have_node()) {
    WARN("SKIPPED: node is not installed, so tokenizers.js cannot run (.ci/setup installs nodejs)");
    return false;
  }
  const fs::path js = test::npm_modules() / "@huggingface" / "tokenizers";
  if (!fs::exists(js)) FAIL("missing " + js.string() + "; run .ci/fetch-test-data");
  return true;
}

}  // namespace

TEST_CASE("Gemma- and Llama-2-style tokenizer.json files load with their pipeline", "[text]") {
  test::TempFolder d("sentencepiece");
  for (const auto& v : variants()) {
    INFO(v.name);
    auto t = text::load_tokenizer(d.write(v.name + ".json", v.json));
    CHECK(t->has_decoder());
    CHECK(t->post_processor().before() == std::vector<TokenId>{v.bos});
  }
  auto gemma = text::load_tokenizer(d.path() / "gemma3.json");
  CHECK(gemma->normalizer().describe() == "Replace(  -> \u2581)");
  // "Q" is no token: its byte token <0x51> (id 9 + 0x51, after 9 specials) stands for it.
  CHECK(gemma->encode("Q") == std::vector<TokenId>{9 + 0x51});
  CHECK(gemma->decode({9 + 0x51, 9 + 0xE4, 9 + 0xB8, 9 + 0xAD}) == "Q\xE4\xB8\xAD");
  CHECK(gemma->encode("<start_of_turn>") == std::vector<TokenId>{6});
  CHECK(gemma->decode(gemma->encode("Hi there  \xF0\x9F\xA4\x96")) == "Hi there  \xF0\x9F\xA4\x96");
}

TEST_CASE("Gemma- and Llama-2-style tokenizer.json files match Hugging Face's tokenizers.js",
          "[text][reference]") {
  if (!have_reference()) return;
  const auto corpus = texts();
  for (const auto& v : variants()) {
    INFO(v.name);
    test::TempFolder d("sentencepiece_" + v.name);
    d.write(v.name + ".json", v.json);
    run_reference(d, corpus, v.name);
    auto t = text::load_tokenizer(d.path() / (v.name + ".json"));
    for (const auto& c : corpus) {
      INFO(c.name);
      const auto ids = t->encode(c.bytes);
      const auto want = read_ids(d.path() / "texts" / (c.name + "." + v.name));
      REQUIRE_FALSE(want.empty());
      CHECK(ids == want);
      CHECK(t->decode(ids) == d.read("texts/" + c.name + "." + v.name + ".text"));
      // Gemma's pipeline loses nothing but a "\u2581" in the text, which comes back a space.
      if (v.name.rfind("gemma", 0) == 0 && c.bytes.find("\u2581") == std::string::npos)
        CHECK(t->decode(ids) == c.bytes);
    }
  }
}

TEST_CASE("a planted change to a Gemma-style file makes the ids differ from tokenizers.js",
          "[text][reference]") {
  if (!have_reference()) return;
  const auto all = texts();
  const std::vector<test::CorpusText> corpus(all.begin(), all.begin() + 16);
  auto with_runs = kWords;
  with_runs.insert(with_runs.end(), kSpaceRuns.begin(), kSpaceRuns.end());
  test::PieceVocab gemma(kGemmaSpecials, with_runs), before_normalizer(kGemmaSpecials, with_runs);
  gemma.add_added("\u2581\u2581", true, false);
  before_normalizer.add_added("\u2581\u2581", false, false);
  test::TempFolder d("sentencepiece_planted");
  const std::string good = gemma.json(kReplaceSpace, "null", kGemmaDecoder, kFallback, true, 2);
  d.write("gemma.json", good);
  run_reference(d, corpus, "gemma");
  const std::vector<std::pair<std::string, std::string>> planted = {
      {"byte_fallback off",
       gemma.json(kReplaceSpace, "null", kGemmaDecoder, R"(, "fuse_unk": true)", true, 2)},
      {"no normalizer", gemma.json("null", "null", kGemmaDecoder, kFallback, true, 2)},
      {"an added token matched before the normalizer",
       before_normalizer.json(kReplaceSpace, "null", kGemmaDecoder, kFallback, true, 2)},
  };
  for (const auto& [what, json] : planted) {
    INFO(what);
    auto t = text::load_tokenizer(d.write("planted.json", json));
    auto good_t = text::load_tokenizer(d.path() / "gemma.json");
    int differ = 0;
    for (const auto& c : corpus) {
      const auto want = read_ids(d.path() / "texts" / (c.name + ".gemma"));
      CHECK(good_t->encode(c.bytes) == want);
      differ += t->encode(c.bytes) != want;
    }
    CHECK(differ > 0);
  }
}
