// One GPT-2 vocabulary written in every file layout remat reads gives identical ids; tokenizer.json
// pre-tokenizer sequences (SmolLM2's Digits + ByteLevel, a Llama-3-style Split) match Hugging
// Face's tokenizers.js; what is not byte-level BPE is refused in one line.
#include "text/tokenizer_files.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "tests/support/run_command.h"
#include "tests/text/corpus.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using namespace remat;
using text::TokenId;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

constexpr const char* kByteLevel =
    R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})";
constexpr const char* kSmolLM2 =
    R"({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]})";
constexpr const char* kLlama3Split =
    R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex":
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
        "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})";

// A tokenizer.json around a vocabulary object's JSON text and merge lines "a b".
std::string tokenizer_json(const std::string& vocab_json, const std::vector<std::string>& merges,
                           bool pair_merges, const std::string& pre_tokenizer,
                           const std::string& extra = "") {
  std::string m;
  for (const auto& line : merges) {
    if (!m.empty()) m += ",";
    const auto space = line.find(' ');
    m += pair_merges ? "[" + json_string(line.substr(0, space)) + "," +
                           json_string(line.substr(space + 1)) + "]"
                     : json_string(line);
  }
  return R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "single_word": false,
      "lstrip": false, "rstrip": false, "normalized": true, "special": true}],
    "normalizer": null, "pre_tokenizer": )" +
         pre_tokenizer + extra + R"(,
    "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
      "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "vocab": )" +
         vocab_json + R"(, "merges": [)" + m + "]}}";
}

std::vector<std::string> merge_lines(const std::string& vocab_bpe) {
  std::vector<std::string> lines;
  std::istringstream in(vocab_bpe);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.rfind("#version", 0) != 0) lines.push_back(line);
  return lines;
}

// The GPT-2 files in every layout, under one folder.
struct Gpt2Layouts {
  test::TempFolder dir{"tokenizer_files"};
  std::string vocab = slurp(test::gpt2_files() / "encoder.json");
  std::string bpe = slurp(test::gpt2_files() / "vocab.bpe");

  Gpt2Layouts() {
    write(dir.path() / "openai" / "encoder.json", vocab);
    write(dir.path() / "openai" / "vocab.bpe", bpe);
    write(dir.path() / "hf-pair" / "vocab.json", vocab);
    write(dir.path() / "hf-pair" / "merges.txt", bpe);
    const auto lines = merge_lines(bpe);
    write(dir.path() / "json-strings" / "tokenizer.json",
          tokenizer_json(vocab, lines, false, kByteLevel));
    write(dir.path() / "json-pairs" / "tokenizer.json",
          tokenizer_json(vocab, lines, true, kByteLevel));
    write(dir.path() / "smollm2.json", tokenizer_json(vocab, lines, false, kSmolLM2));
    write(dir.path() / "llama3-split.json", tokenizer_json(vocab, lines, true, kLlama3Split));
  }
};

std::vector<TokenId> read_ids(const fs::path& p) {
  std::ifstream in(p);
  std::vector<TokenId> ids;
  for (uint64_t id; in >> id;) ids.push_back(TokenId(id));
  return ids;
}

bool has_non_ascii_number(const std::string& text) {
  text::Regex number("(?=\\p{N})[^\\x00-\\x7F]");
  std::size_t begin = 0, end = 0;
  return number.find(text, 0, begin, end);
}

}  // namespace

TEST_CASE("the GPT-2 vocabulary gives identical ids from every file layout", "[text][reference]") {
  if (!fs::exists(test::gpt2_files() / "encoder.json")) {
    if (!test::have_node()) {
      WARN("SKIPPED: node is not installed, so the GPT-2 files were not fetched");
      return;
    }
    FAIL(test::fetch_hint());
  }
  Gpt2Layouts files;
  const fs::path d = files.dir.path();
  auto reference = text::load_tokenizer(d / "openai");
  const std::vector<fs::path> layouts = {d / "openai" / "encoder.json",
                                         d / "openai" / "vocab.bpe",
                                         d / "hf-pair",
                                         d / "hf-pair" / "merges.txt",
                                         d / "json-strings",
                                         d / "json-pairs" / "tokenizer.json"};
  auto corpus = test::license_corpus();
  for (auto& g : test::generated_corpus()) corpus.push_back(std::move(g));
  for (const auto& layout : layouts) {
    INFO(layout.string());
    auto t = text::load_tokenizer(layout);
    CHECK(t->vocab_size() == reference->vocab_size());
    for (const auto& c : corpus) {
      INFO(c.name);
      CHECK(t->encode(c.bytes) == reference->encode(c.bytes));
    }
  }
}

TEST_CASE("tokenizer.json pre-tokenizer sequences match Hugging Face's tokenizers.js",
          "[text][reference]") {
  if (!test::have_node()) {
    WARN("SKIPPED: node is not installed, so tokenizers.js cannot run (.ci/setup installs nodejs)");
    return;
  }
  if (!fs::exists(test::gpt2_files() / "encoder.json")) FAIL(test::fetch_hint());
  Gpt2Layouts files;
  const fs::path d = files.dir.path();
  auto corpus = test::license_corpus();
  for (auto& g : test::javascript_safe(test::generated_corpus())) corpus.push_back(std::move(g));
  std::ofstream list(d / "list");
  for (const auto& c : corpus) {
    write(d / "texts" / c.name, c.bytes);
    list << (d / "texts" / c.name).string() << "\n";
  }
  list.close();
  for (const char* variant : {"json-strings/tokenizer.json", "smollm2.json", "llama3-split.json"}) {
    INFO(variant);
    const auto run = test::run_command(
        "node '" REMAT_SOURCE_DIR "/tests/text/hf_reference.cjs' '" + test::npm_modules().string() +
        "' '" + (d / variant).string() + "' hf '" + (d / "list").string() + "'");
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto t = text::load_tokenizer(d / variant);
    for (const auto& c : corpus) {
      INFO(c.name);
      // tokenizers.js splits Digits on JavaScript's ASCII-only \d; Hugging Face's Rust
      // definition, which remat follows, on every Unicode number (char::is_numeric).
      if (std::string(variant) == "smollm2.json" && has_non_ascii_number(c.bytes)) continue;
      const auto ids = t->encode(c.bytes);
      CHECK(ids == read_ids(d / "texts" / (c.name + ".hf")));
      CHECK(t->decode(ids) == c.bytes);
    }
  }
}
