// What `remat train --data FILE` trains on: the file's bytes (vocabulary 256), the tokens of its
// text under --tokenizer, an llm.c token file, nanoGPT's raw uint16 tokens (--data-format u16),
// or the examples of a fine-tuning JSONL file (text/chat_examples.h), one per row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/json_writer.h"
#include "formats/example_rows.h"
#include "formats/token_dataset.h"
#include "formats/validation_rows.h"
#include "text/tokenizer.h"

namespace remat::cli {

// The rows a run reads: windows of a token stream (formats/token_dataset.h) or fine-tuning
// examples (formats/example_rows.h). Batch i holds rows i*B .. i*B+B-1 in both.
class TrainingRows {
 public:
  explicit TrainingRows(TokenDataset stream) : rows_(std::move(stream)) {}
  explicit TrainingRows(ExampleRows examples) : rows_(std::move(examples)) {}

  Batch batch(uint64_t index, int batch_size) const;
  // The loss a unigram model reaches on the targets (the trained ones, for examples).
  double unigram_entropy() const;
  void check_vocab(std::size_t vocab) const;
  // "N tokens", or "N examples, C cut to T+1 tokens, D dropped ..., K trained targets".
  std::string summary(const char* unit) const;
  // Examples only ("" else): rows, examples per row, padding and trained targets a step of
  // `rows_per_step` rows (B × accum), over one pass, one example a row and packed, the one read
  // marked.
  std::string packing_summary(int rows_per_step) const;
  // The same figures as a JSON object (examples only; null else).
  void packing_json(JsonWriter& j, int rows_per_step) const;
  const ExampleRows* examples() const { return std::get_if<ExampleRows>(&rows_); }
  // The first (up to) n tokens of row 0, padding left out: --sample's prompt.
  std::vector<uint32_t> first_tokens(std::size_t n) const;
  // The tokens of a stream; 0 for examples.
  std::size_t stream_size() const;

 private:
  std::variant<TokenDataset, ExampleRows> rows_;
};

// A JSONL file's settings: the chat template that replaces the tokenizer folder's, and the seed
// of a per-epoch shuffle of the rows (formats/example_rows.h), and whether rows are packed.
struct JsonlOptions {
  std::optional<std::filesystem::path> chat_template;
  std::optional<uint64_t> shuffle;
  bool pack = false;  // several examples to a row (formats/example_packing.h)
};

struct TrainingData {
  TrainingRows data;
  std::string kind;                            // "bytes", "tokens" or "examples"
  std::unique_ptr<text::Tokenizer> tokenizer;  // when --tokenizer was given
  std::optional<std::string> tokenizer_path;
  JsonlOptions jsonl;
};

// `format`: "auto" (a .jsonl file as fine-tuning examples; an llm.c token file by its magic
// number; else text: tokenized with `tokenizer` when given, else bytes), "bytes", "text",
// "llmc", "u16" or "jsonl" (which needs `tokenizer`). Every token is checked against `vocab`
// here, before any step runs. Errors are UsageError or std::invalid_argument.
TrainingData load_training_data(const std::filesystem::path& file, const std::string& format,
                                const std::optional<std::string>& tokenizer, int seq, int vocab,
                                const JsonlOptions& jsonl = {});

// --val-data: a held-out file read under the same rules (format, the training data's tokenizer
// and chat template, vocabulary check; examples never shuffled) and evaluated on its first
// `batches` batches: for a stream, batch k, row b is the window starting at ((k*B + b)*T) mod
// (n - T - 1); for examples, row k*B + b is example (k*B + b) mod n, or with --pack those same
// examples packed (formats/validation_rows.h: the same targets in fewer rows). `batches` is
// max_batches, or fewer when the file holds fewer whole batches of distinct windows or examples
// (at least one; a file shorter than B of them repeats some), or packed, the batches the packed
// rows fill.
struct ValidationData {
  TrainingRows data;                       // the whole file
  std::optional<ValidationRows> examples;  // JSONL: the rows evaluated
  int batches = 0;
  // Batch k < batches of B rows.
  Batch batch(int k, int batch_size) const;
  // "; packed: E examples in R rows" when packed, else "".
  std::string packing_summary() const;
};

// What `remat train` and `remat plan` print about the data: "data     FILE: N tokens, unigram
// entropy ...", and for examples a "rows     " line (packing_summary).
std::string data_report(const std::filesystem::path& file, const TrainingData& training,
                        int rows_per_step);

ValidationData load_validation_data(const std::filesystem::path& file, const std::string& format,
                                    const TrainingData& training, int batch, int seq, int vocab,
                                    int max_batches);

}  // namespace remat::cli
