// formats/training_rows.h: a data file read as `remat train` and the C API read it, as a token
// stream (bytes, text under a tokenizer, llm.c tokens, raw uint16) cut into TokenDataset's
// windows; JSONL is refused there (its examples are rows of their own).
#include "formats/training_rows.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/token_file.h"
#include "formats/tokenizer_source.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/temp_folder.h"

using namespace remat;

namespace {

void write(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

const std::string kText = "hello shell, hello hall; hello hell.\n";

}  // namespace

TEST_CASE("training rows: each format reads its tokens, and the rows window them") {
  test::TempFolder d("training_rows");
  write(d / "t.txt", kText);
  test::write_tiny_tokenizer(d / "tok");
  const auto tok = load_tokenizer_from(d / "tok");

  // No tokenizer (or bytes): the bytes themselves.
  for (DataFormat f : {DataFormat::automatic, DataFormat::bytes}) {
    const TokenStream s =
        read_token_stream(d / "t.txt", f, f == DataFormat::bytes ? tok.get() : nullptr);
    CHECK(s.bytes);
    CHECK(s.data == kText);
  }
  // A tokenizer: the text's ids (fewer than its bytes: merged).
  const std::vector<uint32_t> ids = tok->encode(kText);
  REQUIRE(ids.size() < kText.size());
  for (DataFormat f : {DataFormat::automatic, DataFormat::text}) {
    const TokenStream s = read_token_stream(d / "t.txt", f, tok.get());
    CHECK_FALSE(s.bytes);
    CHECK(s.tokens == ids);
  }
  // An llm.c token file by its magic number, with or without a tokenizer.
  write_token_file(d / "t.bin", ids, 261);
  CHECK(read_token_stream(d / "t.bin", DataFormat::automatic, tok.get()).tokens == ids);
  CHECK(read_token_stream(d / "t.bin", DataFormat::llmc, nullptr).tokens == ids);
  // Raw uint16: two bytes an id.
  write(d / "u16.bin", std::string("\x01\x00\x02\x01", 4));
  CHECK(read_token_stream(d / "u16.bin", DataFormat::u16, nullptr).tokens ==
        std::vector<uint32_t>{1, 258});

  const int seq = 5;
  const TrainingRows bytes =
      TrainingRows::of_stream(read_token_stream(d / "t.txt", DataFormat::automatic, nullptr), seq);
  const TrainingRows tokens =
      TrainingRows::of_stream(read_token_stream(d / "t.txt", DataFormat::text, tok.get()), seq);
  CHECK(std::string(bytes.kind()) == "bytes");
  CHECK(std::string(tokens.kind()) == "tokens");
  CHECK(bytes.stream_size() == kText.size());
  CHECK(tokens.stream_size() == ids.size());
  CHECK(tokens.examples() == nullptr);
  // Batch 2 of 3 rows: windows at ((2*3 + b)*T) mod (n - T - 1).
  const Batch b = tokens.batch(2, 3);
  const uint64_t span = ids.size() - seq - 1;
  for (int row = 0; row < 3; ++row)
    for (int t = 0; t < seq; ++t) {
      const uint64_t start = ((2 * 3 + uint64_t(row)) * seq) % span;
      CHECK(b.tokens[std::size_t(row * seq + t)] == ids[start + uint64_t(t)]);
      CHECK(b.targets[std::size_t(row * seq + t)] == ids[start + uint64_t(t) + 1]);
    }
  CHECK(tokens.first_tokens(3) == std::vector<uint32_t>(ids.begin(), ids.begin() + 3));
  CHECK(tokens.unigram_entropy() == TokenDataset::from_tokens(ids, seq, "x").unigram_entropy());
  CHECK_NOTHROW(tokens.check_vocab(261));
  CHECK_THROWS_WITH(tokens.check_vocab(258), Catch::Contains("t.txt"));
}

TEST_CASE("training rows: bad files and formats are refused in one line naming the file") {
  test::TempFolder d("training_rows_bad");
  write(d / "empty.txt", "");
  write(d / "odd.bin", "abc");
  write(d / "t.txt", kText);
  write(d / "x.jsonl", "{\"text\": \"hi\"}\n");
  const auto refused = [](const std::filesystem::path& p, DataFormat f, const std::string& what) {
    INFO(p.string());
    CHECK_THROWS_AS(read_token_stream(p, f, nullptr), std::invalid_argument);
    CHECK_THROWS_WITH(read_token_stream(p, f, nullptr), Catch::Contains(what));
  };
  refused(d / "missing.txt", DataFormat::automatic, (d / "missing.txt").string());
  refused("/dev/zero", DataFormat::automatic, "/dev/zero: is not a regular file");
  refused(d / "odd.bin", DataFormat::u16, "3 bytes is not a whole number of uint16 tokens");
  refused(d / "t.txt", DataFormat::llmc, (d / "t.txt").string());
  refused(d / "t.txt", DataFormat::text, "text is read as tokens with a tokenizer");
  refused(d / "x.jsonl", DataFormat::jsonl, "JSONL examples are rows of their own");
  CHECK(reads_as_jsonl(d / "x.jsonl", DataFormat::automatic));
  CHECK_FALSE(reads_as_jsonl(d / "x.jsonl", DataFormat::bytes));
  CHECK(reads_as_jsonl(d / "t.txt", DataFormat::jsonl));
  // An empty file reads, and is too short for any window.
  TokenStream empty = read_token_stream(d / "empty.txt", DataFormat::automatic, nullptr);
  CHECK_THROWS_WITH(TrainingRows::of_stream(std::move(empty), 4),
                    Catch::Contains((d / "empty.txt").string()));
}
