// What `remat train --data FILE` trains on: the file's bytes (vocabulary 256), the tokens of its
// text under --tokenizer, an llm.c token file, or nanoGPT's raw uint16 tokens (--data-format u16).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "runtime/token_dataset.h"
#include "text/tokenizer.h"

namespace remat::cli {

struct TrainingData {
  TokenDataset data;
  std::string kind;                            // "bytes" or "tokens"
  std::unique_ptr<text::Tokenizer> tokenizer;  // when --tokenizer was given
};

// `format`: "auto" (an llm.c token file by its magic number, else text: tokenized with
// `tokenizer` when given, else bytes), "bytes", "text", "llmc" or "u16". Every token is checked
// against `vocab` here, before any step runs. Errors are UsageError or std::invalid_argument.
TrainingData load_training_data(const std::filesystem::path& file, const std::string& format,
                                const std::optional<std::string>& tokenizer, int seq, int vocab);

// --val-data: a held-out file read under the same rules (format, the training data's tokenizer,
// vocabulary check) and evaluated on its first `batches` batches, windowed as --data is: batch
// k, row b is the window starting at ((k*B + b)*T) mod (n - T - 1). `batches` is max_batches,
// or fewer when the file holds fewer whole batches of distinct windows (at least one; a file
// shorter than B windows repeats some).
struct ValidationData {
  TokenDataset data;
  int batches = 0;
};

ValidationData load_validation_data(const std::filesystem::path& file, const std::string& format,
                                    const TrainingData& training, int batch, int seq, int vocab,
                                    int max_batches);

}  // namespace remat::cli
