// remat_examples_load_text: rows of a token stream as `remat train --data` reads them. The test
// has the CLI tokenize a text (`remat tokenize --out`) and report it (`remat plan --data`), and
// checks the C API's batches against that token file under the documented windowing, its report
// against the CLI's, and bad input against one line and a status. Needs no device.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "formats/token_file.h"
#include "remat/remat.h"
#include "remat/remat.hpp"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::check_error;
namespace fs = std::filesystem;

namespace {

remat_text_options text_options(int32_t seq, uint32_t vocab, const char* tokenizer = nullptr,
                                int32_t format = REMAT_DATA_AUTO) {
  remat_text_options o{};
  o.struct_size = sizeof o;
  o.seq = seq;
  o.vocab = vocab;
  o.tokenizer_path = tokenizer;
  o.format = format;
  return o;
}

// Owns what remat_examples_load_text returned.
struct Rows {
  remat_examples* rows = nullptr;
  Rows() = default;
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
  ~Rows() { remat_examples_free(rows); }
};

struct Pair {
  std::vector<uint32_t> tokens, targets;
};

Pair batch_of(const remat_examples* rows, uint64_t index, int batch, int seq) {
  Pair p{std::vector<uint32_t>(std::size_t(batch * seq)),
         std::vector<uint32_t>(std::size_t(batch * seq))};
  REQUIRE(remat_examples_batch(rows, index, batch, p.tokens.data(), p.targets.data()) == REMAT_OK);
  return p;
}

// Row b of batch `index` by the contract the header states, from the stream itself.
Pair windows(const std::vector<uint32_t>& stream, uint64_t index, int batch, int seq) {
  Pair p;
  const uint64_t n = stream.size(), span = n - uint64_t(seq) - 1;
  for (int b = 0; b < batch; ++b) {
    const uint64_t start = ((index * uint64_t(batch) + uint64_t(b)) * uint64_t(seq)) % span;
    for (int t = 0; t < seq; ++t) {
      p.tokens.push_back(stream[start + uint64_t(t)]);
      p.targets.push_back(stream[start + uint64_t(t) + 1]);
    }
  }
  return p;
}

// A text whose words the tiny tokenizer merges ("hell", " h") and whose bytes it does not.
std::string sample_text() {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "hello " + std::to_string(i * 7 % 13) + " shell hall\n";
  return text;
}

struct Files {
  remat::test::TempFolder dir{"text_rows"};
  fs::path tok = dir / "tok", text = dir / "text.txt", tokens = dir / "tokens.bin";
  Files() {
    remat::test::write_tiny_tokenizer(tok);
    std::ofstream(text, std::ios::binary) << sample_text();
  }
};

}  // namespace

TEST_CASE("c api: a text's rows under a tokenizer are the CLI's tokens, windowed as it trains") {
  Files f;
  const int seq = 16, batch = 3;
  const auto tokenized =
      remat::test::run_remat("tokenize --tokenizer '" + f.tok.string() + "' --out '" +
                             f.tokens.string() + "' '" + f.text.string() + "'");
  INFO(tokenized.err);
  REQUIRE(tokenized.exit_code == 0);
  const std::vector<uint32_t> stream = remat::read_token_file(f.tokens);
  REQUIRE(stream.size() < sample_text().size());  // merges happened: tokens, not bytes

  const std::string tok = f.tok.string();
  const remat_text_options text = text_options(seq, 261, tok.c_str());
  const remat_text_options file = text_options(seq, 261, nullptr, REMAT_DATA_LLMC);
  Rows from_text, from_file;
  REQUIRE(remat_examples_load_text(f.text.c_str(), &text, &from_text.rows) == REMAT_OK);
  REQUIRE(remat_examples_load_text(f.tokens.c_str(), &file, &from_file.rows) == REMAT_OK);
  // Enough batches to wrap around the stream more than once.
  const uint64_t batches = 2 * stream.size() / (batch * seq) + 3;
  for (uint64_t i = 0; i < batches; ++i) {
    INFO("batch " << i);
    const Pair want = windows(stream, i, batch, seq);
    const Pair a = batch_of(from_text.rows, i, batch, seq),
               b = batch_of(from_file.rows, i, batch, seq);
    CHECK(a.tokens == want.tokens);
    CHECK(a.targets == want.targets);
    CHECK(b.tokens == want.tokens);
    CHECK(b.targets == want.targets);
  }

  // What the rows hold is what `remat plan --data` reports of the same text.
  remat_rows_report r{sizeof(remat_rows_report)};
  REQUIRE(remat_examples_report(from_text.rows, &r) == REMAT_OK);
  CHECK(r.kind == REMAT_ROWS_TOKENS);
  CHECK(r.tokens == stream.size());
  CHECK(r.examples == 0);
  const auto plan = remat::test::run_remat("plan tiny --vocab 261 --seq 16 --data '" +
                                           f.text.string() + "' --tokenizer '" + tok + "'");
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  char line[200];
  std::snprintf(line, sizeof line, ": %llu tokens, unigram entropy %.3f nats/token",
                static_cast<unsigned long long>(r.tokens), r.unigram_entropy);
  CHECK(plan.out.find(f.text.string() + line) != std::string::npos);

  // A stream's rows count no examples: those calls say so, the packed batch has plain positions.
  uint64_t kept = 0, trained = 0;
  check_error(remat_examples_count(from_text.rows, &kept, &trained), REMAT_ERROR_INVALID_ARGUMENT,
              "not examples");
  remat_packing_report packing{sizeof(remat_packing_report)};
  check_error(remat_examples_packing(from_text.rows, &packing), REMAT_ERROR_INVALID_ARGUMENT,
              "remat_examples_packing: the rows are windows of a token stream");
  std::vector<uint32_t> t(2 * seq), g(2 * seq), pos(2 * seq);
  REQUIRE(remat_examples_batch_packed(from_text.rows, 0, 2, t.data(), g.data(), pos.data()) ==
          REMAT_OK);
  for (int i = 0; i < 2 * seq; ++i) CHECK(pos[std::size_t(i)] == uint32_t(i % seq));
}

TEST_CASE("c api: a text without a tokenizer is its bytes, and the C++ wrapper reads the same") {
  Files f;
  const std::string text = sample_text();
  const std::vector<uint32_t> bytes(text.begin(), text.end());
  const remat_text_options o = text_options(8, 256);
  Rows rows;
  REQUIRE(remat_examples_load_text(f.text.c_str(), &o, &rows.rows) == REMAT_OK);
  remat_rows_report r{sizeof(remat_rows_report)};
  REQUIRE(remat_examples_report(rows.rows, &r) == REMAT_OK);
  CHECK(r.kind == REMAT_ROWS_BYTES);
  CHECK(r.tokens == text.size());
  const remat::api::Examples wrapped = remat::api::Examples::load_text(f.text.string(), 8, 256);
  CHECK(wrapped.report().unigram_entropy == r.unigram_entropy);
  std::vector<uint32_t> tokens, targets;
  for (uint64_t i : {0, 1, 7, 500}) {
    const Pair want = windows(bytes, i, 4, 8);
    CHECK(batch_of(rows.rows, i, 4, 8).tokens == want.tokens);
    wrapped.batch(i, 4, tokens, targets);
    CHECK(tokens == want.tokens);
    CHECK(targets == want.targets);
  }
}

TEST_CASE("c api: load_text refuses bad files and options with a status and one line") {
  Files f;
  const std::string tok = f.tok.string();
  const fs::path empty = f.dir / "empty.txt", short_text = f.dir / "short.txt",
                 big_ids = f.dir / "big.bin", jsonl = f.dir / "chat.jsonl";
  std::ofstream(empty, std::ios::binary).flush();
  std::ofstream(short_text, std::ios::binary) << "hello";
  remat::write_token_file(big_ids, {1, 2, 3, 40000, 5, 6, 7, 8, 9, 10, 11, 12}, 50257);
  std::ofstream(jsonl, std::ios::binary) << "{\"text\": \"hello\"}\n";
  const remat_text_options bytes = text_options(4, 256);
  const remat_text_options with_tok = text_options(4, 261, tok.c_str());
  const remat_text_options small_vocab = text_options(4, 1000);

  struct Case {
    const char* path;
    remat_text_options options;
    remat_status status;
    std::string mentions;
  };
  const std::string missing = (f.dir / "missing.txt").string();
  const std::vector<Case> cases = {
      {missing.c_str(), bytes, REMAT_ERROR_IO, missing + ": no such file"},
      {"/dev/zero", bytes, REMAT_ERROR_INVALID_ARGUMENT,
       "/dev/zero: is not a regular file (a character device)"},
      {empty.c_str(), bytes, REMAT_ERROR_INVALID_ARGUMENT, empty.string()},
      {empty.c_str(), with_tok, REMAT_ERROR_INVALID_ARGUMENT, empty.string()},
      {short_text.c_str(), bytes, REMAT_ERROR_INVALID_ARGUMENT, short_text.string()},
      {big_ids.c_str(), small_vocab, REMAT_ERROR_INVALID_ARGUMENT, "40000"},
      {f.text.c_str(), text_options(4, 100), REMAT_ERROR_INVALID_ARGUMENT,
       "byte-level data needs options->vocab of at least 256, got 100"},
      {f.text.c_str(), text_options(4, 260, tok.c_str()), REMAT_ERROR_INVALID_ARGUMENT,
       "the tokenizer has 261 ids but options->vocab is 260"},
      {f.text.c_str(), text_options(4, 261, "/dev/zero"), REMAT_ERROR_INVALID_ARGUMENT,
       "/dev/zero: is not a regular file"},
      {jsonl.c_str(), with_tok, REMAT_ERROR_INVALID_ARGUMENT, "remat_examples_load_with"},
      {f.text.c_str(), text_options(0, 256), REMAT_ERROR_INVALID_ARGUMENT, "options->seq is 0"},
      {f.text.c_str(), text_options(4, 0), REMAT_ERROR_INVALID_ARGUMENT, "options->vocab is 0"},
      {f.text.c_str(), text_options(4, 256, nullptr, 9), REMAT_ERROR_INVALID_ARGUMENT,
       "options->format is 9"},
      {f.text.c_str(), text_options(4, 256, nullptr, REMAT_DATA_TEXT), REMAT_ERROR_INVALID_ARGUMENT,
       "needs options->tokenizer_path"},
      {f.text.c_str(), text_options(4, 261, tok.c_str(), REMAT_DATA_BYTES),
       REMAT_ERROR_INVALID_ARGUMENT, "options->tokenizer_path must be NULL"},
      {f.text.c_str(), text_options(4, 256, nullptr, REMAT_DATA_LLMC), REMAT_ERROR_INVALID_ARGUMENT,
       f.text.string()},
  };
  for (const Case& c : cases) {
    INFO(c.path << " " << c.mentions);
    remat_examples* rows = reinterpret_cast<remat_examples*>(&rows);  // must become NULL
    check_error(remat_examples_load_text(c.path, &c.options, &rows), c.status, c.mentions);
    CHECK(rows == nullptr);
  }
  remat_examples* rows = nullptr;
  check_error(remat_examples_load_text(nullptr, &bytes, &rows), REMAT_ERROR_INVALID_ARGUMENT,
              "path is NULL");
  check_error(remat_examples_load_text(f.text.c_str(), nullptr, &rows),
              REMAT_ERROR_INVALID_ARGUMENT, "options");
  check_error(remat_examples_load_text(f.text.c_str(), &bytes, nullptr),
              REMAT_ERROR_INVALID_ARGUMENT, "rows is NULL");
  remat_rows_report r{sizeof(remat_rows_report)};
  check_error(remat_examples_report(nullptr, &r), REMAT_ERROR_INVALID_ARGUMENT, "NULL");
}
