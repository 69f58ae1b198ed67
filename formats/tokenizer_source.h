// Where the CLI and the C API take a tokenizer and its chat template from, by the path they are
// given: a GGUF model file (*.gguf, formats/gguf_tokenizer.h) carries both; anything else is a
// tokenizer file or folder with its tokenizer_config.json (text/tokenizer_files.h,
// text/chat_template.h). Errors are std::invalid_argument lines naming the file.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "text/chat_examples.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace remat {

std::unique_ptr<text::Tokenizer> load_tokenizer_from(const std::filesystem::path& path);

// The chat template with the bos_token and eos_token it renders with; refused when there is none
// (tokenizer.chat_template missing, tokenizer_config.json without chat_template).
text::ChatTemplateFile load_chat_template_from(const std::filesystem::path& path);

// The fine-tuning examples of text/chat_examples.h for `tokenizer`, read from `path`: a GGUF
// file's tokenizer.chat_template and bos and eos tokens, or text::chat_examples_for's
// configuration; `template_file` replaces the template.
text::ChatExamples chat_examples_from(text::Tokenizer& tokenizer, const std::filesystem::path& path,
                                      const std::optional<std::filesystem::path>& template_file);

}  // namespace remat
