// The C API on a Gemma-3-shaped GGUF model with Gemma 3's SentencePiece vocabulary and chat
// template (tests/formats/gguf_gemma3_spm_model.h): remat_tokenizer_load reads the file's
// tokenizer (libllama's ids and text), remat_examples_load renders samples/data/chat.jsonl with the
// file's template into rows of libllama's ids, and a LoRA session made from the file trains on
// them.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/gguf_tokenizer.h"
#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/formats/gguf_gemma3_spm_model.h"
#include "text/chat_template.h"
#include "text/jsonl_examples.h"
#include "text/vocab_files.h"

namespace fs = std::filesystem;

TEST_CASE("c api: a Gemma 3 GGUF's SentencePiece tokenizer and template train a LoRA session") {
  const remat::test::LlamaLibrary* lib = remat::test::llama_library();
  if (!lib || !remat::test::have_llama_cpp_source() || !remat::test::have_spm_sources()) return;
  const remat::test::TempFolder d("api_gguf_spm");
  const fs::path model = remat::test::write_gemma3_spm_model(d);
  const remat::test::LlamaVocabModel llama(*lib, model);

  remat_tokenizer* t = nullptr;
  REQUIRE(remat_tokenizer_load(model.c_str(), &t) == REMAT_OK);
  uint32_t vocab = 0;
  CHECK(remat_tokenizer_vocab_size(t, &vocab) == REMAT_OK);
  CHECK(vocab == 262144);
  const std::string text = "<start_of_turn>model\nVoilà  — 東京\t🙂<end_of_turn>\n";
  for (int special = 0; special < 2; ++special) {
    std::size_t count = 0;
    REQUIRE(remat_tokenizer_encode(t, text.data(), text.size(), special, nullptr, 0, &count) ==
            REMAT_OK);
    std::vector<uint32_t> ids(count);
    REQUIRE(remat_tokenizer_encode(t, text.data(), text.size(), special, ids.data(), ids.size(),
                                   &count) == REMAT_OK);
    CHECK(ids == llama.tokenize(text, false, special != 0));
    std::size_t bytes = 0;
    REQUIRE(remat_tokenizer_decode(t, ids.data(), ids.size(), nullptr, 0, &bytes) == REMAT_OK);
    std::string back(bytes, '\0');
    REQUIRE(remat_tokenizer_decode(t, ids.data(), ids.size(), back.data(), back.size(), &bytes) ==
            REMAT_OK);
    CHECK(back == llama.detokenize(ids));
    CHECK(back == text);
  }
  remat_tokenizer_free(t);

  // Rows of the chat examples: row k starts with example k's ids, libllama's for its rendering.
  const fs::path chats = fs::path(REMAT_SOURCE_DIR) / "samples/data/chat.jsonl";
  const int32_t seq = 64, batch = 2;
  remat_examples* e = nullptr;
  REQUIRE(remat_examples_load(chats.c_str(), model.c_str(), nullptr, seq, &e) == REMAT_OK);
  uint64_t kept = 0, trained = 0;
  REQUIRE(remat_examples_count(e, &kept, &trained) == REMAT_OK);
  CHECK(kept == 36);
  std::vector<uint32_t> tokens(std::size_t(batch * seq)), targets(tokens.size());
  REQUIRE(remat_examples_batch(e, 0, batch, tokens.data(), targets.data()) == REMAT_OK);
  const remat::GgufTokenizer gguf = remat::load_gguf_tokenizer(model);
  const auto examples = remat::text::parse_jsonl_examples(remat::text::read_file(chats), "");
  for (int row = 0; row < batch; ++row) {
    const std::string rendered =
        remat::text::ChatTemplate(gguf.chat.source)
            .render(examples[std::size_t(row)].messages, gguf.chat.options);
    const std::vector<uint32_t> want = llama.tokenize(rendered, false, true);
    REQUIRE(want.size() <= std::size_t(seq));
    const auto first = tokens.begin() + row * seq;
    CHECK(std::vector<uint32_t>(first, first + std::ptrdiff_t(want.size())) == want);
  }

  // A LoRA session of the file's shape, its weights loaded from it, trains on those rows.
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  REQUIRE(remat_session_params_from_file(&p, model.c_str()) == REMAT_OK);
  CHECK(p.vocab == 262144);
  p.batch = batch;
  p.seq = seq;
  p.lora_rank = 8;
  p.learning_rate = 1e-3;
  p.pipeline_cache_dir = "";
  remat::test::Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  REQUIRE(remat_session_load_file(h.session, model.c_str()) == REMAT_OK);
  float loss = -1;
  for (uint64_t step = 0; step < 2; ++step) {
    REQUIRE(remat_examples_batch(e, step, batch, tokens.data(), targets.data()) == REMAT_OK);
    REQUIRE(remat_session_step(h.session, tokens.data(), targets.data(), tokens.size(), &loss) ==
            REMAT_OK);
    CHECK(std::isfinite(loss));
    CHECK(loss > 0);
  }
  remat_examples_free(e);
}
