// The tokens that end a generation (`remat generate`): a model's end-of-sequence and end-of-turn
// tokens, gathered from every place a checkpoint or tokenizer names them, so that a chat model
// stops where its template ends a turn and a base model where its text ends.
#pragma once

#include <filesystem>
#include <vector>

#include "text/tokenizer.h"

namespace remat {

// The special tokens that end a text or a turn wherever a tokenizer has them as special tokens:
// GPT-2's and Qwen's <|endoftext|>, Llama 3's <|end_of_text|> and <|eot_id|>, Gemma's <eos> and
// <end_of_turn>, ChatML's <|im_end|>.
inline constexpr const char* kStopTokenTexts[] = {"<|endoftext|>", "<|end_of_text|>", "<|eot_id|>",
                                                  "<eos>",         "<end_of_turn>",   "<|im_end|>"};

// The ids generation stops at, sorted, each once, the union of:
//  - eos_token_id (a number or a list of numbers) of config.json and generation_config.json in
//    `init` when it is a Hugging Face folder;
//  - tokenizer.ggml.eos_token_id and tokenizer.ggml.eot_token_id of `init` or `tokenizer_path`
//    when it is a GGUF file;
//  - the eos_token of tokenizer_config.json in `tokenizer_path` when it is a folder that has one,
//    as a special token of `tokenizer`;
//  - kStopTokenTexts that are special tokens of `tokenizer`.
// std::invalid_argument naming the file whose eos_token_id is neither.
std::vector<uint32_t> generation_stop_ids(const std::filesystem::path& init,
                                          const std::filesystem::path& tokenizer_path,
                                          const text::Tokenizer& tokenizer);

}  // namespace remat
