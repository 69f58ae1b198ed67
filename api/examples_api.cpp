// remat_examples_*: the fine-tuning rows of formats/example_rows.h built from a JSONL file of
// examples, the way `remat finetune` builds them, so a C app trains on chat data without
// rendering templates or masks itself.
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/error_boundary.h"
#include "base/row_positions.h"
#include "formats/example_rows.h"
#include "formats/tokenizer_source.h"
#include "text/chat_examples.h"

using remat::capi::ApiError;
using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

struct remat_examples {
  std::unique_ptr<remat::ExampleRows> rows;
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

// Pad id 0, no shuffle: the rows samples/finetune.cpp and `remat finetune` train on, packed or
// one example a row.
std::unique_ptr<remat::ExampleRows> read_examples(const char* jsonl, const char* tokenizer_path,
                                                  const char* template_file, int seq, bool pack) {
  const auto tokenizer = remat::load_tokenizer_from(tokenizer_path);
  std::optional<std::filesystem::path> chat_template;
  if (template_file != nullptr) chat_template = template_file;
  auto chat = remat::chat_examples_from(*tokenizer, tokenizer_path, chat_template);
  std::vector<remat::TokenExample> rows;
  for (remat::text::MaskedTokens& m : chat.encode_file(jsonl))
    rows.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return std::make_unique<remat::ExampleRows>(std::move(rows), seq, /*pad=*/0, jsonl, std::nullopt,
                                              pack);
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
    *kept = e.rows->size();
    *trained_targets = e.rows->report().trained_targets;
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
    const remat::PackingReport& p = e.rows->packing();
    report->examples = e.rows->size();
    report->filled = p.filled;
    report->plain_rows = p.plain_rows;
    report->packed_rows = p.packed_rows;
    report->plain_padding = p.plain_padding();
    report->packed_padding = p.packed_padding();
    report->packed = e.rows->packed() ? 1 : 0;
  });
}

}  // extern "C"
