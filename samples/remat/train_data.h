// What `remat train --data FILE` trains on: the file's bytes (vocabulary 256), the tokens of its
// text under --tokenizer, an llm.c token file, nanoGPT's raw uint16 tokens (--data-format u16),
// or the examples of a fine-tuning JSONL file (text/chat_examples.h), one per row. The rows are
// read and batched by formats/training_rows.h, as the C API reads them; here are the flags'
// rules and messages, and what `remat train` and `remat plan` print about the data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "formats/training_rows.h"
#include "formats/validation_rows.h"
#include "text/tokenizer.h"

namespace remat::cli {

// The reading and batching of rows is the library's (formats/training_rows.h); what a run says
// about them is here.

// "N tokens", or "N examples, C cut to T+1 tokens, D dropped ..., K trained targets".
std::string rows_summary(const TrainingRows& rows, const char* unit);
// Examples only ("" else): rows, examples per row, padding and trained targets a step of
// `rows_per_step` rows (B × accum), over one pass, one example a row and packed, the one read
// marked.
std::string packing_summary(const TrainingRows& rows, int rows_per_step);
// The same figures as a JSON object (examples only; null else).
void packing_json(JsonWriter& j, const TrainingRows& rows, int rows_per_step);

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
