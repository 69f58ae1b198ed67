// What a training run reads, as rows a step takes B at a time: windows of a token stream (a
// text's bytes, its tokens under a tokenizer, an llm.c token file, nanoGPT's raw uint16 ids;
// formats/token_dataset.h) or the examples of a fine-tuning JSONL file (formats/example_rows.h).
// The reading and batching `remat train`, `remat plan` and the C API share; how a run reports
// them is the CLI's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "formats/example_rows.h"
#include "formats/token_dataset.h"
#include "text/tokenizer.h"

namespace remat {

// How a data file is read. automatic: a .jsonl file as examples, an llm.c token file by its
// magic number, else text (encoded when a tokenizer is given, else its bytes).
enum class DataFormat { automatic, bytes, text, llmc, u16, jsonl };

// Whether `file` read as `format` is fine-tuning examples (jsonl, or automatic and a .jsonl name).
bool reads_as_jsonl(const std::filesystem::path& file, DataFormat format);

// A JSONL file's settings: the chat template that replaces the tokenizer's, the seed of a
// per-epoch shuffle of the rows (formats/example_rows.h), and whether rows are packed.
struct JsonlOptions {
  std::optional<std::filesystem::path> chat_template;
  std::optional<uint64_t> shuffle;
  bool pack = false;  // several examples to a row (formats/example_packing.h)
};

// A token stream's file decoded, before it is cut into windows.
struct TokenStream {
  bool bytes = false;            // the file's bytes are the tokens (a vocabulary of 256)
  std::string data;              // those bytes, when `bytes`
  std::vector<uint32_t> tokens;  // else the ids
  std::string origin;            // the file, for messages
};

// Reads `file` (not as jsonl): an llm.c token file (llmc, or automatic and its magic number),
// raw little-endian uint16 ids (u16), text encoded with `tokenizer` (text, or automatic with one),
// else its bytes. std::invalid_argument naming the file when it is missing, no regular file,
// malformed for its format, or text without a tokenizer. Ids are not checked against a
// vocabulary here (TrainingRows::check_vocab).
TokenStream read_token_stream(const std::filesystem::path& file, DataFormat format,
                              text::Tokenizer* tokenizer);

// The rows a run reads. Batch i holds rows i*B .. i*B+B-1 of either kind.
class TrainingRows {
 public:
  // Windows of seq + 1 tokens over the stream (TokenDataset's contract); std::invalid_argument
  // when it is too short for one.
  static TrainingRows of_stream(TokenStream stream, int seq);
  explicit TrainingRows(ExampleRows examples) : rows_(std::move(examples)) {}

  // "bytes", "tokens" or "examples".
  const char* kind() const;
  Batch batch(uint64_t index, int batch_size) const;
  // The loss a unigram model reaches on the targets (the trained ones, for examples).
  double unigram_entropy() const;
  // std::invalid_argument naming the first id that is not below `vocab`.
  void check_vocab(std::size_t vocab) const;
  const ExampleRows* examples() const { return std::get_if<ExampleRows>(&rows_); }
  const TokenDataset* stream() const { return std::get_if<TokenDataset>(&rows_); }
  // The first (up to) n tokens of row 0, padding left out (a prompt to sample from).
  std::vector<uint32_t> first_tokens(std::size_t n) const;
  // The tokens of a stream; 0 for examples.
  std::size_t stream_size() const;

 private:
  TrainingRows(TokenDataset stream, bool bytes) : rows_(std::move(stream)), bytes_(bytes) {}
  std::variant<TokenDataset, ExampleRows> rows_;
  bool bytes_ = false;
};

// Each example of a JSONL file as a row, encoded with `tokenizer` and rendered with the chat
// template `tokenizer_path` carries (formats/tokenizer_source.h) or jsonl.chat_template. Padded
// inputs are id 0, which every vocabulary has and no trained position sees (it only follows the
// example). std::invalid_argument naming the file and line for a malformed example, and when no
// example keeps a trained target.
TrainingRows read_example_rows(const std::filesystem::path& file, text::Tokenizer& tokenizer,
                               const std::filesystem::path& tokenizer_path,
                               const JsonlOptions& jsonl, int seq);

}  // namespace remat
