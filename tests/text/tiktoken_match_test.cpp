// remat's GPT-2 tokenizer against tiktoken (OpenAI's implementation, WASM) on the real GPT-2 files:
// identical ids on every license and generated text, with and without special tokens, and
// decode(encode(x)) == x for all of it. Skips only when node is not installed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/text/corpus.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/tokenizer_files.h"

using namespace remat;
using text::TokenId;
namespace fs = std::filesystem;

namespace {

std::vector<TokenId> read_ids(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  std::vector<TokenId> ids;
  for (uint64_t id; in >> id;) ids.push_back(TokenId(id));
  return ids;
}

std::string show(text::Tokenizer& t, const std::vector<TokenId>& ids, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < std::min(ids.size(), from + 8); ++i) {
    out += std::to_string(ids[i]) + "(";
    for (unsigned char c : t.token_bytes(ids[i]).value_or("?")) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", c);
      out += hex;
    }
    out += ") ";
  }
  return out;
}

// "" when equal, else where and how they first differ.
std::string difference(text::Tokenizer& t, const std::vector<TokenId>& got,
                       const std::vector<TokenId>& want) {
  if (got == want) return "";
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const std::size_t from = i < 3 ? 0 : i - 3;
  return "first difference at token " + std::to_string(i) + " of " + std::to_string(want.size()) +
         ": remat " + show(t, got, from) + "| tiktoken " + show(t, want, from);
}

}  // namespace

TEST_CASE("GPT-2 encoding matches tiktoken on licenses, every Unicode plane and invalid UTF-8",
          "[text][reference]") {
  if (!test::have_node()) {
    WARN("SKIPPED: node is not installed, so tiktoken cannot run (.ci/setup installs nodejs)");
    return;
  }
  if (!fs::exists(test::gpt2_files() / "encoder.json")) FAIL(test::fetch_hint());
  auto tokenizer = text::load_tokenizer(test::gpt2_files());
  REQUIRE(tokenizer->vocab_size() == 50257);

  const test::TempFolder folder("tiktoken");
  const fs::path& dir = folder.path();
  auto corpus = test::license_corpus();
  REQUIRE(corpus.size() >= 10);
  for (auto& g : test::generated_corpus()) corpus.push_back(std::move(g));
  std::ofstream list(dir / "list");
  for (const auto& c : corpus) {
    std::ofstream(dir / c.name, std::ios::binary) << c.bytes;
    list << (dir / c.name).string() << "\n";
  }
  list.close();
  const auto run = test::run_command(
      "node '" REMAT_SOURCE_DIR "/tests/text/tiktoken_reference.cjs' '" +
      test::npm_modules().string() + "' encode '" + (dir / "list").string() + "'");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);

  std::size_t tokens = 0;
  for (const auto& c : corpus) {
    INFO(c.name);
    const auto ids = tokenizer->encode(c.bytes);
    CHECK(difference(*tokenizer, ids, read_ids(dir / (c.name + ".tiktoken"))) == "");
    const auto ordinary = tokenizer->encode(c.bytes, false);
    CHECK(difference(*tokenizer, ordinary, read_ids(dir / (c.name + ".tiktoken-ordinary"))) == "");
    CHECK(tokenizer->decode(ids) == c.bytes);
    CHECK(tokenizer->decode(ordinary) == c.bytes);
    tokens += ids.size();
  }
  CHECK(tokens > 100000);  // the corpus is not trivially small
}
