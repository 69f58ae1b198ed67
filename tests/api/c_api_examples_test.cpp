// The fine-tuning examples of the C API and their C++ wrapper: chat JSONL rendered with a tokenizer
// folder's ChatML template (or a template file), batches equal to the library's ExampleRows, and
// clean errors on a missing file, a malformed line and NULL arguments.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "formats/example_rows.h"
#include "remat/remat.h"
#include "remat/remat.hpp"
#include "tests/api/chat_files.h"
#include "tests/api/check_error.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/temp_folder.h"
#include "tests/text/llama_vocab_tests.h"
#include "tests/text/reference_data.h"
#include "text/chat_examples.h"
#include "text/tokenizer_files.h"

namespace fs = std::filesystem;

using remat::test::check_error;

namespace {

// The rows the library builds for `remat finetune` (samples/finetune.cpp's read_rows).
remat::ExampleRows library_rows(const fs::path& jsonl, const fs::path& tokenizer_path, int seq,
                                const std::optional<fs::path>& template_file = std::nullopt) {
  const auto tokenizer = remat::text::load_tokenizer(tokenizer_path);
  auto chat = remat::text::chat_examples_for(*tokenizer, tokenizer_path, template_file);
  std::vector<remat::TokenExample> rows;
  for (remat::text::MaskedTokens& m : chat.encode_file(jsonl))
    rows.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return remat::ExampleRows(std::move(rows), seq, 0, jsonl.string());
}

// Batches 0..3 of the C API equal the library's; every trained target is the next input.
void check_same_rows(const remat::api::Examples& api, const remat::ExampleRows& library,
                     int32_t batch) {
  REQUIRE(api.size() == library.size());
  CHECK(api.trained_targets() == library.report().trained_targets);
  std::vector<uint32_t> tokens, targets;
  for (uint64_t index = 0; index < 4; ++index) {
    api.batch(index, batch, tokens, targets);
    const remat::Batch want = library.batch(index, batch);
    CHECK(tokens == want.tokens);
    CHECK(targets == want.targets);
    for (std::size_t i = 0; i + 1 < targets.size(); ++i)
      if (targets[i] != REMAT_IGNORE_TARGET && (i + 1) % api.seq() != 0)
        CHECK(targets[i] == tokens[i + 1]);
  }
}

// A tokenizer folder (the tiny test tokenizer) with a ChatML template, and 5 chats.
struct ChatFiles {
  remat::test::TempFolder d{"api_examples"};
  fs::path tokenizer = d / "tok", jsonl = d / "chat.jsonl";
  ChatFiles() {
    remat::test::write_tiny_tokenizer(tokenizer);
    remat::test::write_chat_config(tokenizer);
    remat::test::write_chats(jsonl, 5);
  }
};

}  // namespace

TEST_CASE("examples from chat JSONL are the rows remat finetune trains on") {
  ChatFiles f;
  const auto api = remat::api::Examples::load(f.jsonl, f.tokenizer, 96);
  CHECK(api.size() == 5);
  // Only the assistant turns are trained: far fewer targets than the rows' tokens.
  CHECK(api.trained_targets() > 0);
  CHECK(api.trained_targets() < 5 * 30);
  check_same_rows(api, library_rows(f.jsonl, f.tokenizer, 96), 3);
  // A row shorter than seq is padded with id 0 and ignored targets.
  std::vector<uint32_t> tokens, targets;
  api.batch(0, 1, tokens, targets);
  CHECK(tokens.back() == 0);
  CHECK(targets.back() == REMAT_IGNORE_TARGET);
  // Rows cut to seq + 1 tokens (the answers start at token 53) keep what they train.
  check_same_rows(remat::api::Examples::load(f.jsonl, f.tokenizer, 56),
                  library_rows(f.jsonl, f.tokenizer, 56), 2);
}

TEST_CASE("examples take a chat template file over the folder's") {
  ChatFiles f;
  const fs::path plain = f.d / "plain.jinja";
  std::ofstream(plain) << "{% for m in messages %}{{ m.role + ': ' + m.content + '\n' }}"
                          "{% endfor %}";
  const auto api = remat::api::Examples::load(f.jsonl, f.tokenizer, 64, plain);
  check_same_rows(api, library_rows(f.jsonl, f.tokenizer, 64, plain), 2);
  std::vector<uint32_t> with_file, chatml, targets;
  api.batch(0, 1, with_file, targets);
  remat::api::Examples::load(f.jsonl, f.tokenizer, 64).batch(0, 1, chatml, targets);
  CHECK(with_file != chatml);
}

TEST_CASE("examples use GPT-2's tokenizer folder with a ChatML configuration") {
  if (!remat::test::have_gpt2_files()) {
    WARN(remat::test::fetch_hint());
    return;
  }
  ChatFiles f;
  const fs::path tok = f.d / "gpt2";
  fs::create_directories(tok);
  for (const char* file : {"encoder.json", "vocab.bpe"})
    fs::copy_file(remat::test::gpt2_files() / file, tok / file);
  remat::test::write_chat_config(tok);
  const auto api = remat::api::Examples::load(f.jsonl, tok, 32);
  CHECK(api.size() == 5);
  check_same_rows(api, library_rows(f.jsonl, tok, 32), 4);
}

TEST_CASE("examples refuse missing files, malformed lines and NULL arguments") {
  ChatFiles f;
  remat_examples* e = reinterpret_cast<remat_examples*>(&f);  // must be reset to NULL
  const std::string jsonl = f.jsonl.string(), tok = f.tokenizer.string();
  check_error(remat_examples_load("/nonexistent/chat.jsonl", tok.c_str(), nullptr, 32, &e),
              REMAT_ERROR_IO, "/nonexistent/chat.jsonl: no such file or folder");
  CHECK(e == nullptr);
  check_error(remat_examples_load(jsonl.c_str(), "/nonexistent/tok", nullptr, 32, &e),
              REMAT_ERROR_IO, "/nonexistent/tok: no such file or folder");
  check_error(remat_examples_load(jsonl.c_str(), tok.c_str(), "/nonexistent.jinja", 32, &e),
              REMAT_ERROR_IO, "/nonexistent.jinja: no such file or folder");
  const fs::path bad = f.d / "bad.jsonl";
  std::ofstream(bad) << R"({"text": "fine"})"
                     << "\n{\"text\": \n";
  check_error(remat_examples_load(bad.c_str(), tok.c_str(), nullptr, 32, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "line 2");
  CHECK(std::string(remat_last_error()).find(bad.string()) != std::string::npos);
  check_error(remat_examples_load(nullptr, tok.c_str(), nullptr, 32, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "jsonl_path is NULL");
  check_error(remat_examples_load(jsonl.c_str(), nullptr, nullptr, 32, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "tokenizer_path is NULL");
  check_error(remat_examples_load(jsonl.c_str(), tok.c_str(), nullptr, 32, nullptr),
              REMAT_ERROR_INVALID_ARGUMENT, "examples is NULL");
  check_error(remat_examples_load(jsonl.c_str(), tok.c_str(), nullptr, 0, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "seq is 0");

  // Cut before any answer, no example is left to train.
  check_error(remat_examples_load(jsonl.c_str(), tok.c_str(), nullptr, 32, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "none of its 5 examples has a trained token");

  REQUIRE(remat_examples_load(jsonl.c_str(), tok.c_str(), nullptr, 96, &e) == REMAT_OK);
  uint64_t kept = 0, trained = 0;
  std::vector<uint32_t> tokens(2 * 96), targets(2 * 96);
  check_error(remat_examples_count(nullptr, &kept, &trained), REMAT_ERROR_INVALID_ARGUMENT,
              "examples is NULL");
  check_error(remat_examples_count(e, nullptr, &trained), REMAT_ERROR_INVALID_ARGUMENT,
              "kept is NULL");
  check_error(remat_examples_count(e, &kept, nullptr), REMAT_ERROR_INVALID_ARGUMENT,
              "trained_targets is NULL");
  check_error(remat_examples_batch(e, 0, 2, nullptr, targets.data()), REMAT_ERROR_INVALID_ARGUMENT,
              "tokens is NULL");
  check_error(remat_examples_batch(e, 0, 2, tokens.data(), nullptr), REMAT_ERROR_INVALID_ARGUMENT,
              "targets is NULL");
  check_error(remat_examples_batch(e, 0, 0, tokens.data(), targets.data()),
              REMAT_ERROR_INVALID_ARGUMENT, "batch is 0");
  check_error(remat_examples_batch(nullptr, 0, 2, tokens.data(), targets.data()),
              REMAT_ERROR_INVALID_ARGUMENT, "examples is NULL");
  CHECK(remat_examples_batch(e, 7, 2, tokens.data(), targets.data()) == REMAT_OK);
  remat_examples_free(e);
  remat_examples_free(nullptr);
  // The C++ wrapper throws the same message.
  CHECK_THROWS_WITH(remat::api::Examples::load(bad.string(), tok, 32),
                    Catch::Matchers::Contains("line 2"));
}

TEST_CASE("examples take a GGUF file's tokenizer and chat template") {
  if (!remat::test::have_llama_cpp_source()) return;
  ChatFiles f;
  const fs::path qwen2 = remat::test::llama_test_vocabulary("qwen2");
  const auto api = remat::api::Examples::load(f.jsonl, qwen2, 64);
  CHECK(api.size() == 5);
  // Row 0 is the file's template (Qwen2's, with its default system turn) encoded with its
  // special tokens, the answer and what follows it trained.
  const std::string rendered =
      "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\n0+1"
      "<|im_end|>\n<|im_start|>assistant\n1<|im_end|>\n";
  const auto want = remat::api::Tokenizer::load(qwen2).encode(rendered);
  std::vector<uint32_t> tokens, targets;
  api.batch(0, 1, tokens, targets);
  REQUIRE(tokens.size() == 64);
  CHECK(std::vector<uint32_t>(tokens.begin(), tokens.begin() + long(want.size())) == want);
  CHECK(api.trained_targets() == 5 * 3);  // "1", "<|im_end|>", "\n" of each answer
}
