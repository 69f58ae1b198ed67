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

// Pad id 0, no shuffle: the rows samples/finetune.cpp and `remat finetune` train on.
std::unique_ptr<remat::ExampleRows> read_examples(const char* jsonl, const char* tokenizer_path,
                                                  const char* template_file, int seq) {
  const auto tokenizer = remat::load_tokenizer_from(tokenizer_path);
  std::optional<std::filesystem::path> chat_template;
  if (template_file != nullptr) chat_template = template_file;
  auto chat = remat::chat_examples_from(*tokenizer, tokenizer_path, chat_template);
  std::vector<remat::TokenExample> rows;
  for (remat::text::MaskedTokens& m : chat.encode_file(jsonl))
    rows.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return std::make_unique<remat::ExampleRows>(std::move(rows), seq, /*pad=*/0, jsonl);
}

}  // namespace

extern "C" {

remat_status remat_examples_load(const char* jsonl_path, const char* tokenizer_path,
                                 const char* chat_template_path_or_null, int32_t seq,
                                 remat_examples** examples) {
  return guarded([&] {
    require(examples != nullptr, "examples is NULL");
    *examples = nullptr;
    require(jsonl_path != nullptr, "jsonl_path is NULL");
    require(tokenizer_path != nullptr, "tokenizer_path is NULL");
    if (seq < 1) invalid("seq is " + std::to_string(seq) + ", it must be at least 1");
    require_exists(jsonl_path);
    require_exists(tokenizer_path);
    if (chat_template_path_or_null != nullptr) require_exists(chat_template_path_or_null);
    auto e = std::make_unique<remat_examples>();
    e->rows = read_examples(jsonl_path, tokenizer_path, chat_template_path_or_null, seq);
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

}  // extern "C"
