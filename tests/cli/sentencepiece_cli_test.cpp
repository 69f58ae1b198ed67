// A Gemma-style tokenizer.json (character-level BPE with byte fallback) through the CLI:
// tokenize and detokenize give the text back, and `remat generate` prints decoded text, not the
// pieces' "\u2581" or byte tokens.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/run_command.h"
#include "tests/text/piece_vocab.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

namespace {

// Gemma 3's pipeline around a small vocabulary of common English pieces.
std::string gemma_style_json() {
  const remat::test::PieceVocab v(
      {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"}, {"\u2581the",
                                                                                 "\u2581of",
                                                                                 "\u2581to",
                                                                                 "\u2581and",
                                                                                 "\u2581a",
                                                                                 "\u2581or",
                                                                                 "\u2581you",
                                                                                 "\u2581that",
                                                                                 "\u2581is",
                                                                                 "\u2581in",
                                                                                 "\u2581License",
                                                                                 "\u2581program",
                                                                                 "\u2581work",
                                                                                 "\u2581software",
                                                                                 "\u2581this",
                                                                                 "\u2581any",
                                                                                 "\u2581be",
                                                                                 "\u2581for",
                                                                                 "\u2581under",
                                                                                 "ing",
                                                                                 "ion",
                                                                                 "tion",
                                                                                 "er",
                                                                                 "re",
                                                                                 "\u2581\u2581",
                                                                                 ".\n",
                                                                                 "\n\n"});
  return v.json(R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})", "null",
                R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String":
                "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]})",
                R"(, "fuse_unk": true, "byte_fallback": true)", true, 2);
}

}  // namespace

TEST_CASE("remat tokenize and detokenize round-trip text through a Gemma-style tokenizer") {
  remat::test::TempFolder d("sentencepiece_cli");
  d.write("tok/tokenizer.json", gemma_style_json());
  const std::string text = "the License  is free\xF0\x9F\xA4\x96 Quiz\n<start_of_turn>user\n";
  d.write("in.txt", text);
  const auto ids = run_remat("tokenize --tokenizer " + d.quoted("tok") + " " + d.quoted("in.txt"));
  INFO(ids.err);
  REQUIRE(ids.exit_code == 0);
  d.write("ids.txt", ids.out);
  const auto back =
      run_remat("detokenize --tokenizer " + d.quoted("tok") + " " + d.quoted("ids.txt"));
  CHECK(back.exit_code == 0);
  CHECK(back.out == text);
}

TEST_CASE("remat generate prints decoded text through a Gemma-style tokenizer") {
  remat::test::TempFolder d("sentencepiece_generate");
  d.write("tok/tokenizer.json", gemma_style_json());
  const std::string model =
      "--layers 1 --dim 32 --heads 2 --vocab 512 --ctx 16 --seq 16 --batch 2 ";
  const auto train =
      run_remat("train " + model + "--steps 3 --tokenizer " + d.quoted("tok") +
                " --data /usr/share/common-licenses/GPL-3 --save " + d.quoted("w.safetensors"));
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  const auto gen = run_remat("generate --init " + d.quoted("w.safetensors") + " --tokenizer " +
                             d.quoted("tok") + " --prompt 'the License' --tokens 24 --seed 1");
  INFO(gen.err);
  REQUIRE(gen.exit_code == 0);
  CHECK(gen.out.rfind("the License", 0) == 0);
  CHECK(gen.out.size() > std::string("the License\n").size());
  CHECK(gen.out.find("\u2581") == std::string::npos);
  CHECK(gen.out.find("<0x") == std::string::npos);
}
