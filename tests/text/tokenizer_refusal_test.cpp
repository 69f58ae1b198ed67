// What is not a BPE tokenizer remat can reproduce is refused with one line that names the file and
// the unsupported setting; a minimal valid tokenizer.json loads.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "base/json_writer.h"
#include "tests/text/temp_folder.h"
#include "text/byte_unicode.h"
#include "text/tokenizer_files.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// A tokenizer.json of the 256 byte tokens and one merge ("a b"), with parts replaced.
std::string tokenizer_json(std::map<std::string, std::string> parts = {}) {
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b)
    vocab += json_string(text::bytes_to_unicode_text(std::string(1, char(b)))) + ": " +
             std::to_string(b) + ",";
  vocab += "\"ab\": 256, \"<|endoftext|>\": 257}";
  std::map<std::string, std::string> all = {
      {"normalizer", "null"},
      {"pre_tokenizer", R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})"},
      {"added_tokens", R"([{"id": 257, "content": "<|endoftext|>", "special": true}])"},
      {"model", R"({"type": "BPE", "dropout": null, "vocab": )" + vocab + R"(, "merges": ["a b"])" +
                    parts["model_options"] + "}"}};
  parts.erase("model_options");  // more keys of the model object, each starting with ','
  for (auto& [k, v] : parts) all[k] = v;
  std::string out = "{";
  for (const auto& [k, v] : all) out += (out.size() > 1 ? ", " : "") + json_string(k) + ": " + v;
  return out + "}";
}

// The one-line error loading `path` gives.
std::string refusal(const fs::path& path) {
  try {
    text::load_tokenizer(path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE("a minimal byte-level tokenizer.json loads and encodes", "[text]") {
  test::TempFolder f("refusal");
  auto t = text::load_tokenizer(f.write("ok/tokenizer.json", tokenizer_json()));
  CHECK(t->vocab_size() == 258);
  CHECK(t->encode("cab<|endoftext|>") == std::vector<text::TokenId>{'c', 256, 257});
  auto folder = text::load_tokenizer(f.path() / "ok");
  CHECK(folder->encode("ab") == std::vector<text::TokenId>{256});
}

TEST_CASE("tokenizers that are not BPE as remat reads it are refused in one line naming why",
          "[text]") {
  test::TempFolder f("refusal");
  const std::map<std::string, std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {"wordpiece",
       {{{"model", R"({"type": "WordPiece", "vocab": {}})"}}, "model WordPiece is not supported"}},
      {"unigram",
       {{{"model", R"({"type": "Unigram", "vocab": []})"}}, "model Unigram is not supported"}},
      {"nfkc", {{{"normalizer", R"({"type": "NFKC"})"}}, "normalizer NFKC is not supported"}},
      {"lowercase",
       {{{"normalizer", R"({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})"}},
        "normalizer Lowercase is not supported"}},
      {"regex-replace",
       {{{"normalizer", R"({"type": "Replace", "pattern": {"Regex": " +"}, "content": "_"})"}},
        "normalizer Replace with a Regex pattern is not supported"}},
      {"whitespace",
       {{{"pre_tokenizer", R"({"type": "Whitespace"})"}},
        "pre_tokenizer Whitespace is not supported"}},
      {"metaspace-bytelevel",
       {{{"pre_tokenizer",
          R"({"type": "Sequence", "pretokenizers": [{"type": "Metaspace"}, {"type": "ByteLevel"}]})"}},
        "pre_tokenizer Metaspace together with ByteLevel is not supported"}},
      {"prepend-scheme",
       {{{"pre_tokenizer", R"({"type": "Metaspace", "prepend_scheme": "sometimes"})"}},
        "pre_tokenizer Metaspace prepend_scheme 'sometimes' is not supported"}},
      {"prefix",
       {{{"pre_tokenizer", R"({"type": "ByteLevel", "add_prefix_space": true})"}},
        "add_prefix_space true is not supported"}},
      {"bogus-behavior",
       {{{"pre_tokenizer",
          R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"String": " "}, "behavior": "Bogus", "invert": false}, {"type": "ByteLevel"}]})"}},
        "Split with behavior 'Bogus' is not supported"}},
      {"decoder-bytelevel",
       {{{"pre_tokenizer", R"({"type": "Digits", "individual_digits": true})"},
         {"decoder", R"({"type": "ByteLevel"})"}},
        "decoder ByteLevel without a ByteLevel pre_tokenizer is not supported"}},
      {"decoder-wordpiece",
       {{{"pre_tokenizer", "null"}, {"decoder", R"({"type": "WordPiece", "prefix": "##"})"}},
        "decoder WordPiece is not supported for character-level BPE"}},
      {"decoder-replace-bytelevel",
       {{{"decoder", R"({"type": "Replace", "pattern": {"String": "_"}, "content": " "})"}},
        "decoder Replace is not supported for byte-level BPE (only ByteLevel)"}},
      {"byte-fallback-bytelevel",
       {{{"model_options", R"(, "byte_fallback": true)"}},
        "BPE byte_fallback with a ByteLevel pre_tokenizer is not supported"}},
      {"subword-prefix",
       {{{"model_options", R"(, "continuing_subword_prefix": "##")"}},
        "BPE continuing_subword_prefix '##' is not supported"}},
      {"unk-missing",
       {{{"pre_tokenizer", "null"}, {"model_options", R"(, "unk_token": "<unk>")"}},
        "the unk token '<unk>' is not in the vocabulary"}},
      {"normalized-changed",
       {{{"pre_tokenizer", "null"},
         {"normalizer", R"({"type": "Prepend", "prepend": "_"})"},
         {"added_tokens", R"([{"id": 257, "content": "<|endoftext|>", "normalized": true}])"}},
        "added token '<|endoftext|>' with normalized true, which the normalizer changes to "
        "'_<|endoftext|>', is not supported"}},
      {"lstrip",
       {{{"added_tokens", R"([{"id": 257, "content": "<|endoftext|>", "lstrip": true}])"}},
        "added token '<|endoftext|>' with lstrip true is not supported"}},
      {"bad-regex",
       {{{"pre_tokenizer",
          R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(x"}, "behavior": "Isolated"}, {"type": "ByteLevel"}]})"}},
        "pre_tokenizer Split pattern '(x' at offset 2: missing closing parenthesis"}},
  };
  for (const auto& [name, c] : cases) {
    INFO(name);
    const fs::path p = f.write(name + ".json", tokenizer_json(c.first));
    const std::string why = refusal(p);
    CHECK_THAT(why, Catch::StartsWith(p.string() + ": ") && Catch::Contains(c.second));
    CHECK(why.find('\n') == std::string::npos);
  }
}

TEST_CASE("broken vocabularies and merges are refused naming the file", "[text]") {
  test::TempFolder f("refusal");
  const fs::path bad_merge = f.write(
      "bad_merge.json",
      tokenizer_json({{"model", R"({"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]})"}}));
  CHECK_THAT(refusal(bad_merge), Catch::Contains("merge 1 is neither \"a b\" nor [\"a\", \"b\"]"));
  const fs::path few_bytes =
      f.write("few_bytes.json",
              tokenizer_json({{"model", R"({"type": "BPE", "vocab": {"a": 0}, "merges": []})"}}));
  CHECK(refusal(few_bytes) ==
        few_bytes.string() +
            ": the vocabulary has no token for byte 0x00; byte-level BPE needs all 256");
  const fs::path garbage = f.write("garbage.json", "{\"model\": ");
  CHECK_THAT(refusal(garbage), Catch::StartsWith(garbage.string() + ": not valid JSON"));
  f.write("gpt2/encoder.json", "{}");
  CHECK(refusal(f.path() / "gpt2") ==
        (f.path() / "gpt2").string() + ": encoder.json needs vocab.bpe beside it");
  f.write("pair/vocab.json", R"({"a": 0})");
  f.write("pair/merges.txt", "#version: 0.2\na b c\n");
  CHECK_THAT(
      refusal(f.path() / "pair"),
      Catch::Contains("merges.txt: merge 1 'a b c' is not two tokens separated by one space"));
  f.write("spelled/vocab.json", R"({"a b": 0})");
  f.write("spelled/merges.txt", "");
  CHECK_THAT(refusal(f.path() / "spelled"),
             Catch::Contains("token 'a b' is not byte-level BPE text"));
  CHECK(refusal(f.path() / "nowhere") ==
        (f.path() / "nowhere").string() + ": no such file or folder");
  fs::create_directories(f.path() / "empty");
  CHECK_THAT(refusal(f.path() / "empty"),
             Catch::Contains("not a tokenizer: expected tokenizer.json"));
}
