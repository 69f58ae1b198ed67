// remat_examples_*: the rows of formats/training_rows.h an app trains on, read the way `remat
// train` reads them: the fine-tuning examples of a JSONL file (formats/example_rows.h), so a C
// app trains on chat data without rendering templates or masks itself, or windows of a token
// stream (a text, its bytes, an llm.c token file).
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/error_boundary.h"
#include "base/row_positions.h"
#include "formats/tokenizer_source.h"
#include "formats/training_rows.h"

using remat::capi::ApiError;
using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

struct remat_examples {
  std::unique_ptr<remat::TrainingRows> rows;
  int seq = 0;
};

namespace {

const remat_examples& examples_of(const remat_examples* e) {
  require(e != nullptr, "examples is NULL");
  return *e;
}

void require_exists(const char* path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw ApiError(REMAT_ERROR_IO, std::string(path) + ": no such file or folder");
}

// The examples of fine-tuning rows; a token stream's rows are refused by `call`, which counts
// examples.
const remat::ExampleRows& examples_in(const remat_examples& e, const char* call) {
  const remat::ExampleRows* rows = e.rows->examples();
  if (!rows)
    invalid(std::string(call) + ": the rows are windows of a token stream (" + e.rows->kind() +
            "), not examples; remat_examples_report describes them");
  return *rows;
}

// No shuffle: the rows samples/finetune.cpp and `remat train` train on, packed or one example
// a row.
std::unique_ptr<remat::TrainingRows> read_examples(const char* jsonl, const char* tokenizer_path,
                                                   const char* template_file, int seq, bool pack) {
  const auto tokenizer = remat::load_tokenizer_from(tokenizer_path);
  remat::JsonlOptions options;
  if (template_file != nullptr) options.chat_template = template_file;
  options.pack = pack;
  return std::make_unique<remat::TrainingRows>(
      remat::read_example_rows(jsonl, *tokenizer, tokenizer_path, options, seq));
}

remat::DataFormat data_format_of(int32_t format) {
  switch (format) {
    case REMAT_DATA_AUTO:
      return remat::DataFormat::automatic;
    case REMAT_DATA_BYTES:
      return remat::DataFormat::bytes;
    case REMAT_DATA_TEXT:
      return remat::DataFormat::text;
    case REMAT_DATA_LLMC:
      return remat::DataFormat::llmc;
    default:
      invalid("options->format is " + std::to_string(format) +
              "; use REMAT_DATA_AUTO, REMAT_DATA_BYTES, REMAT_DATA_TEXT or REMAT_DATA_LLMC");
  }
}

// The checks `remat train` makes of --data, --data-format, --tokenizer and --vocab, naming the
// options' fields.
void check_text_options(const char* path, const remat_text_options& o, remat::DataFormat format) {
  if (o.seq < 1) invalid("options->seq is " + std::to_string(o.seq) + ", it must be at least 1");
  if (o.vocab < 1) invalid("options->vocab is 0; give the model's vocabulary");
  if (format == remat::DataFormat::text && !o.tokenizer_path)
    invalid("options->format REMAT_DATA_TEXT needs options->tokenizer_path");
  if (format == remat::DataFormat::bytes && o.tokenizer_path)
    invalid("options->format REMAT_DATA_BYTES reads bytes: options->tokenizer_path must be NULL");
  if (remat::reads_as_jsonl(path, format))
    invalid(std::string(path) +
            ": JSONL examples are read by remat_examples_load_with, not as a token stream");
}

std::unique_ptr<remat::TrainingRows> read_text_rows(const char* path, const remat_text_options& o,
                                                    remat::DataFormat format) {
  std::unique_ptr<remat::text::Tokenizer> tokenizer;
  if (o.tokenizer_path) tokenizer = remat::load_tokenizer_from(o.tokenizer_path);
  if (tokenizer && tokenizer->vocab_size() > o.vocab)
    invalid("the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
            " ids but options->vocab is " + std::to_string(o.vocab));
  remat::TokenStream stream = remat::read_token_stream(path, format, tokenizer.get());
  if (stream.bytes && o.vocab < 256)
    invalid("byte-level data needs options->vocab of at least 256, got " + std::to_string(o.vocab));
  auto rows = std::make_unique<remat::TrainingRows>(
      remat::TrainingRows::of_stream(std::move(stream), o.seq));
  rows->check_vocab(o.vocab);
  return rows;
}

int32_t rows_kind(const remat::TrainingRows& rows) {
  const std::string kind = rows.kind();
  return kind == "examples" ? REMAT_ROWS_EXAMPLES
         : kind == "bytes"  ? REMAT_ROWS_BYTES
                            : REMAT_ROWS_TOKENS;
}

}  // namespace

extern "C" {

remat_status remat_examples_load(const char* jsonl_path, const char* tokenizer_path,
                                 const char* chat_template_path_or_null, int32_t seq,
                                 remat_examples** examples) {
  remat_examples_options o{};
  o.struct_size = sizeof o;
  o.seq = seq;
  o.chat_template_path = chat_template_path_or_null;
  return remat_examples_load_with(jsonl_path, tokenizer_path, &o, examples);
}

remat_status remat_examples_load_with(const char* jsonl_path, const char* tokenizer_path,
                                      const remat_examples_options* options,
                                      remat_examples** examples) {
  return guarded([&] {
    remat::capi::require_struct(options, "options");
    const int32_t seq = options->seq;
    const char* chat_template_path_or_null = options->chat_template_path;
    require(examples != nullptr, "examples is NULL");
    *examples = nullptr;
    require(jsonl_path != nullptr, "jsonl_path is NULL");
    require(tokenizer_path != nullptr, "tokenizer_path is NULL");
    if (seq < 1) invalid("seq is " + std::to_string(seq) + ", it must be at least 1");
    require_exists(jsonl_path);
    require_exists(tokenizer_path);
    if (chat_template_path_or_null != nullptr) require_exists(chat_template_path_or_null);
    auto e = std::make_unique<remat_examples>();
    e->rows = read_examples(jsonl_path, tokenizer_path, chat_template_path_or_null, seq,
                            options->pack != 0);
    e->seq = seq;
    *examples = e.release();
  });
}

void remat_examples_free(remat_examples* examples) {
  delete examples;
}

remat_status remat_examples_count(const remat_examples* examples, uint64_t* kept,
                                  uint64_t* trained_targets) {
  return guarded([&] {
    const remat_examples& e = examples_of(examples);
    require(kept != nullptr, "kept is NULL");
    require(trained_targets != nullptr, "trained_targets is NULL");
    const remat::ExampleRows& rows = examples_in(e, "remat_examples_count");
    *kept = rows.size();
    *trained_targets = rows.report().trained_targets;
  });
}

remat_status remat_examples_batch(const remat_examples* examples, uint64_t index, int32_t batch,
                                  uint32_t* tokens, uint32_t* targets) {
  return guarded([&] {
    const remat_examples& e = examples_of(examples);
    if (batch < 1) invalid("batch is " + std::to_string(batch) + ", it must be at least 1");
    require(tokens != nullptr, "tokens is NULL");
    require(targets != nullptr, "targets is NULL");
    const remat::Batch b = e.rows->batch(index, batch);
    std::memcpy(tokens, b.tokens.data(), b.tokens.size() * sizeof(uint32_t));
    std::memcpy(targets, b.targets.data(), b.targets.size() * sizeof(uint32_t));
  });
}

remat_status remat_examples_batch_packed(const remat_examples* examples, uint64_t index,
                                         int32_t batch, uint32_t* tokens, uint32_t* targets,
                                         uint32_t* positions) {
  return guarded([&] {
    const remat_examples& e = examples_of(examples);
    if (batch < 1) invalid("batch is " + std::to_string(batch) + ", it must be at least 1");
    require(tokens != nullptr, "tokens is NULL");
    require(targets != nullptr, "targets is NULL");
    require(positions != nullptr, "positions is NULL");
    remat::Batch b = e.rows->batch(index, batch);
    if (b.positions.empty()) {  // one example a row: positions 0 .. seq-1
      b.positions.resize(b.tokens.size());
      remat::fill_plain_positions(b.positions, e.seq);
    }
    std::memcpy(tokens, b.tokens.data(), b.tokens.size() * sizeof(uint32_t));
    std::memcpy(targets, b.targets.data(), b.targets.size() * sizeof(uint32_t));
    std::memcpy(positions, b.positions.data(), b.positions.size() * sizeof(uint32_t));
  });
}

remat_status remat_examples_packing(const remat_examples* examples, remat_packing_report* report) {
  return guarded([&] {
    const remat_examples& e = examples_of(examples);
    remat::capi::require_struct(report, "report");
    const remat::ExampleRows& rows = examples_in(e, "remat_examples_packing");
    const remat::PackingReport& p = rows.packing();
    report->examples = rows.size();
    report->filled = p.filled;
    report->plain_rows = p.plain_rows;
    report->packed_rows = p.packed_rows;
    report->plain_padding = p.plain_padding();
    report->packed_padding = p.packed_padding();
    report->packed = rows.packed() ? 1 : 0;
  });
}

remat_status remat_examples_load_text(const char* path, const remat_text_options* options,
                                      remat_examples** rows) {
  return guarded([&] {
    require(rows != nullptr, "rows is NULL");
    *rows = nullptr;
    remat::capi::require_struct(options, "options");
    require(path != nullptr, "path is NULL");
    const remat::DataFormat format = data_format_of(options->format);
    check_text_options(path, *options, format);
    require_exists(path);
    if (options->tokenizer_path) require_exists(options->tokenizer_path);
    auto e = std::make_unique<remat_examples>();
    e->rows = read_text_rows(path, *options, format);
    e->seq = options->seq;
    *rows = e.release();
  });
}

remat_status remat_examples_report(const remat_examples* rows, remat_rows_report* report) {
  return guarded([&] {
    const remat_examples& e = examples_of(rows);
    remat::capi::require_struct(report, "report");
    const remat::TrainingRows& r = *e.rows;
    report->kind = rows_kind(r);
    report->tokens = r.stream_size();
    report->examples = r.examples() ? r.examples()->size() : 0;
    report->trained_targets = r.examples() ? r.examples()->report().trained_targets : 0;
    report->unigram_entropy = r.unigram_entropy();
  });
}

}  // extern "C"
