// llama.cpp's description of a byte-level BPE tokenizer (text/llama_vocab.h) on small hand-made
// vocabularies: which token types are special and where they are matched, the texts llama.cpp
// makes control tokens, add_bos_token and the pre-tokenizers' defaults, bytes without a token,
// and the refusals. tests/formats/gguf_tokenizer_llama_test.cpp compares real files with llama.cpp.
#include "text/llama_vocab.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "text/byte_unicode.h"

using namespace remat::text;
using Ids = std::vector<TokenId>;

namespace {

// The 256 bytes (id = byte, spelled in GPT-2's alphabet) but those in `missing`, then `extra`
// with their types, and the merges "a b" -> "ab", "ab c" -> "abc".
LlamaVocab vocab(const std::vector<std::pair<std::string, int32_t>>& extra = {},
                 const std::string& missing = "") {
  LlamaVocab v;
  v.origin = "v.gguf";
  v.model = "gpt2";
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) {
    const std::string byte(1, char(b));
    v.tokens.push_back(missing.find(byte) == std::string::npos
                           ? bytes_to_unicode_text(byte)
                           : "[unused " + std::to_string(b) + "]");
    v.token_types.push_back(1);
  }
  for (const char* t : {"ab", "abc"}) {
    v.tokens.push_back(t);
    v.token_types.push_back(1);
  }
  for (const auto& [text, type] : extra) {
    v.tokens.push_back(text);
    v.token_types.push_back(type);
  }
  v.merges = {"a b", "ab c"};
  return v;
}

std::string refusal(const LlamaVocab& v) {
  try {
    llama_vocab_tokenizer(v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE(
    "llama vocabulary: control and unknown tokens are matched with special tokens on, "
    "user-defined ones always") {
  auto t = llama_vocab_tokenizer(vocab({{"<ctl>", 3}, {"<unk>", 2}, {"<usr>", 4}, {"<x>", 5}}));
  // 258 <ctl>, 259 <unk>, 260 <usr>, 261 <x> (unused: an ordinary token BPE never makes).
  CHECK(t->encode("abc<ctl><unk><usr><x>") == Ids{257, 258, 259, 260, '<', 'x', '>'});
  CHECK(t->encode("<ctl>ab<usr>", false) == Ids{'<', 'c', 't', 'l', '>', 256, 260});
  CHECK(t->decode({258, 260, 261}) == "<ctl><usr><x>");
  CHECK(t->vocab_size() == 262);
}

TEST_CASE(
    "llama vocabulary: llama.cpp's end-of-generation texts are control tokens whatever "
    "their type, gpt-oss's channel tokens user-defined") {
  LlamaVocab v = vocab({{"</s>", 1}, {"<|im_end|>", 4}, {"<|channel|>", 3}, {"</", 1}});
  v.merges.push_back("< /");
  auto t = llama_vocab_tokenizer(v);
  // 258 </s>, 259 <|im_end|>, 260 <|channel|>, 261 </.
  CHECK(t->encode("</s>") == Ids{258});
  CHECK(t->encode("</s>", false) == Ids{261, 's', '>'});
  CHECK(t->encode("<|im_end|>") == Ids{259});
  CHECK(t->encode("<|im_end|>", false).size() == 10);
  CHECK(t->encode("<|channel|>", false) == Ids{260});
}

TEST_CASE(
    "llama vocabulary: a fill-in-the-middle text is a control token only while its kind's id "
    "key is unset, and only the first llama.cpp meets") {
  LlamaVocab v = vocab({{"<|fim_pad|>", 4}, {"<|im_end|>", 4}, {"<|fim_prefix|>", 4}});
  // 258 <|fim_pad|>, 259 <|im_end|>, 260 <|fim_prefix|>: without keys all three are control.
  CHECK(llama_vocab_tokenizer(v)->encode("<|fim_pad|><|im_end|><|fim_prefix|>", false).size() ==
        11 + 10 + 14);
  // A key that names a token, any token, leaves the kind's texts as they are; the end-of-turn key
  // does not, as "<|im_end|>" ends generation whatever it is.
  v.fim_ids[std::size_t(LlamaFim::pad)] = 258;
  v.fim_ids[std::size_t(LlamaFim::pre)] = 259;
  auto t = llama_vocab_tokenizer(v);
  CHECK(t->encode("<|fim_pad|><|fim_prefix|>", false) == Ids{258, 260});
  CHECK(t->encode("<|im_end|>", false).size() == 10);
  // Of two texts of one kind, one is made control.
  LlamaVocab two = vocab({{"<PAD>", 4}, {"[PAD]", 4}});
  auto u = llama_vocab_tokenizer(two);
  const bool first = u->encode("<PAD>", false) == Ids{258};
  const bool second = u->encode("[PAD]", false) == Ids{259};
  CHECK(first != second);
}

TEST_CASE(
    "llama vocabulary: where special tokens overlap in a text the longer wins wherever it "
    "starts") {
  auto t = llama_vocab_tokenizer(vocab({{"<|a|>", 3}, {"|><|b|>", 4}, {"<|b|>", 3}}));
  // 258 <|a|>, 259 |><|b|>, 260 <|b|>.
  CHECK(t->encode("<|a|><|b|>") == Ids{'<', '|', 'a', 259});
  CHECK(t->encode("<|a|><|a|><|b|>") == Ids{258, '<', '|', 'a', 259});
  CHECK(t->encode("<|b|><|a|>") == Ids{260, 258});
}

TEST_CASE(
    "llama vocabulary: the bos token comes first where add_bos_token, or the pre-tokenizer's "
    "default, says") {
  LlamaVocab v = vocab({{"<s>", 3}, {"</s>", 3}});
  v.bos_id = 258;
  v.eos_id = 259;
  CHECK(llama_vocab_tokenizer(v)->post_processor().apply({97}) == Ids{97});  // gpt-2: no bos
  v.pre = "llama-bpe";  // llama.cpp's default for Llama 3 adds it
  CHECK(llama_vocab_tokenizer(v)->post_processor().apply({97}) == Ids{258, 97});
  CHECK(llama_vocab_tokenizer(v)->encode("abab") == Ids{256, 256});
  v.add_bos = false;
  v.add_eos = true;
  CHECK(llama_vocab_tokenizer(v)->post_processor().apply({97}) == Ids{97, 259});
  // A bos token to add that the file does not name: refused where it would be added.
  v.add_bos = true;
  v.bos_id.reset();
  auto t = llama_vocab_tokenizer(v);
  CHECK(t->encode("a") == Ids{97});
  CHECK_THROWS_WITH(t->post_processor().apply({97}),
                    "v.gguf: add_bos_token is true but tokenizer.ggml.bos_token_id names no token");
  CHECK(llama_token_text(*t, 258) == "<s>");
  CHECK(llama_token_text(*t, 32) == " ");
  CHECK_FALSE(llama_token_text(*t, 9999));
}

TEST_CASE(
    "llama vocabulary: a byte without a token is left out of the encoding, as llama.cpp "
    "leaves it out") {
  auto t = llama_vocab_tokenizer(vocab({}, std::string("\x03\xC0", 2)));
  CHECK(t->encode("a\x03"
                  "b\x03") == Ids{'a', 'b'});
  CHECK(t->encode("\x03") == Ids{});
  CHECK(t->encode("x\xC0\x80y") == Ids{'x', 0x80, 'y'});
}

TEST_CASE(
    "llama vocabulary: every supported pre-tokenizer name compiles, and the Llama 3 family "
    "ignores merges") {
  for (std::string_view name : llama_pre_names()) {
    INFO(name);
    LlamaVocab v = vocab();
    v.pre = std::string(name);
    auto t = llama_vocab_tokenizer(v);
    CHECK(t->decode(t->encode("Hello, world! 12345 'tis")) == "Hello, world! 12345 'tis");
  }
  CHECK(llama_pre_tokenizer("llama-bpe")->ignore_merges);
  CHECK_FALSE(llama_pre_tokenizer("qwen2")->ignore_merges);
  CHECK_FALSE(llama_pre_tokenizer("tekken"));
  // No tokenizer.ggml.pre: llama.cpp's "default".
  LlamaVocab v = vocab();
  v.pre.reset();
  CHECK(llama_vocab_tokenizer(v)->encode("abc") == Ids{257});
}

TEST_CASE("llama vocabulary: what remat cannot read is refused in one line naming the key") {
  LlamaVocab v = vocab();
  v.model = "bert";
  CHECK(refusal(v) ==
        "v.gguf: tokenizer.ggml.model 'bert' is not supported (remat reads byte-level BPE, 'gpt2', "
        "and SentencePiece, 'llama', tokenizers)");
  v = vocab();
  v.pre = "deepseek-llm";
  CHECK_THAT(refusal(v), Catch::StartsWith("v.gguf: tokenizer.ggml.pre 'deepseek-llm' is not "
                                           "supported (supported: gpt-2, phi-2,"));
  v = vocab();
  v.merges.push_back("ab");
  CHECK(refusal(v) ==
        "v.gguf: tokenizer.ggml.merges[2] 'ab' is not two tokens of GPT-2's byte alphabet "
        "separated by a space");
  v = vocab();
  v.token_types.resize(10);
  CHECK(refusal(v) == "v.gguf: tokenizer.ggml.token_type has 10 entries for 258 tokens");
  v = vocab();
  v.tokens.clear();
  CHECK(refusal(v) == "v.gguf: tokenizer.ggml.tokens is empty");
  v = vocab();
  v.name = "Phi-3-mini-4k-instruct";
  CHECK_THAT(refusal(v), Catch::StartsWith("v.gguf: general.name 'Phi-3-mini-4k-instruct' gets "));
}
