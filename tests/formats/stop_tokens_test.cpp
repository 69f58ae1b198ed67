// The ids `remat generate` stops at (formats/stop_tokens.h): config.json's and
// generation_config.json's eos_token_id (a number or a list), a GGUF file's eos and eot ids, the
// tokenizer configuration's eos_token, and the end-of-text and end-of-turn special tokens.
#include "formats/stop_tokens.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"
#include "tests/support/temp_folder.h"
#include "tests/text/small_vocab.h"
#include "text/pre_tokenizer.h"

using namespace remat;
namespace fs = std::filesystem;
using Ids = std::vector<uint32_t>;

namespace {

// Bytes 0..255 and the special tokens given.
text::Tokenizer tokenizer_with(std::vector<text::SpecialToken> specials) {
  const test::SmallVocab v(test::SmallVocab::Merges{});
  auto pre = std::make_unique<text::PreTokenizer>();
  pre->add_isolating_stage(text::kGpt2Pattern);
  return text::Tokenizer(v.vocab, v.merges, std::move(pre), std::move(specials));
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("generation stops at a folder's eos_token_id, numbers or lists, and its tokenizer's") {
  test::TempFolder d("stop_tokens_folder");
  // Llama 3.2 Instruct's: config.json one id, generation_config.json three.
  write(d / "model" / "config.json", R"({"model_type": "llama", "eos_token_id": 300})");
  write(d / "model" / "generation_config.json", R"({"eos_token_id": [300, 301, 302]})");
  write(d / "tok" / "tokenizer_config.json", R"({"eos_token": {"content": "<|my_eos|>"}})");
  const text::Tokenizer t = tokenizer_with({{"<|my_eos|>", 310}, {"<|begin_of_text|>", 311}});
  CHECK(generation_stop_ids(d / "model", d / "tok", t) == Ids{300, 301, 302, 310});
  // Without the files: only the tokenizer's special end tokens.
  CHECK(generation_stop_ids(d / "none", d / "none", t).empty());
  // A null id names none; a string is refused naming the file.
  write(d / "model" / "config.json", R"({"eos_token_id": null})");
  write(d / "model" / "generation_config.json", R"({"eos_token_id": "</s>"})");
  CHECK_THROWS_WITH(generation_stop_ids(d / "model", d / "tok", t),
                    Catch::Contains("generation_config.json: eos_token_id is not a token id"));
  write(d / "model" / "generation_config.json", R"({"eos_token_id": [2, 1.5]})");
  CHECK_THROWS_WITH(generation_stop_ids(d / "model", d / "tok", t),
                    Catch::Contains("eos_token_id is not a token id"));
}

TEST_CASE("generation stops at the end-of-text and end-of-turn special tokens a tokenizer has") {
  const text::Tokenizer t = tokenizer_with({{"<|endoftext|>", 400},
                                            {"<|end_of_text|>", 401},
                                            {"<|eot_id|>", 402},
                                            {"<eos>", 403},
                                            {"<end_of_turn>", 404},
                                            {"<|im_end|>", 405},
                                            {"<|im_start|>", 406},
                                            {"<start_of_turn>", 407}});
  CHECK(generation_stop_ids("", "", t) == Ids{400, 401, 402, 403, 404, 405});
  // Ordinary text with the same spelling is no special token, and no stop.
  CHECK(generation_stop_ids("", "", tokenizer_with({})).empty());
}

TEST_CASE("generation stops at a GGUF file's eos and eot ids") {
  test::TempFolder d("stop_tokens_gguf");
  GgufMetadata md("test");
  md.set("general.architecture", GgufValue::of(std::string("llama")));
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of(uint32_t(128001)));
  md.set("tokenizer.ggml.eot_token_id", GgufValue::of(uint32_t(128009)));
  GgufWriter(d / "m.gguf", md, {}).commit();
  const text::Tokenizer t = tokenizer_with({{"<|eot_id|>", 128009}});
  CHECK(generation_stop_ids(d / "m.gguf", d / "m.gguf", t) == Ids{128001, 128009});
  CHECK(generation_stop_ids(d / "other", d / "m.gguf", t) == Ids{128001, 128009});
}
