#include "formats/tokenizer_source.h"

#include <stdexcept>
#include <string>

#include "formats/gguf.h"
#include "formats/gguf_tokenizer.h"
#include "formats/weight_files.h"
#include "text/tokenizer_files.h"

namespace remat {

namespace fs = std::filesystem;

std::unique_ptr<text::Tokenizer> load_tokenizer_from(const fs::path& path) {
  if (names_gguf_file(path)) return load_gguf_tokenizer(path).tokenizer;
  return text::load_tokenizer(path);
}

text::ChatTemplateFile load_chat_template_from(const fs::path& path) {
  if (!names_gguf_file(path)) return text::load_chat_template(path);
  text::ChatTemplateFile chat = load_gguf_tokenizer(path).chat;
  if (chat.source.empty())
    throw std::invalid_argument(path.string() + ": tokenizer.chat_template is missing");
  return chat;
}

text::ChatExamples chat_examples_from(text::Tokenizer& tokenizer, const fs::path& path,
                                      const std::optional<fs::path>& template_file) {
  if (!names_gguf_file(path)) return text::chat_examples_for(tokenizer, path, template_file);
  // The header once more, for the template: a few megabytes of metadata, read in milliseconds.
  text::ChatTemplateFile chat = gguf_chat_template(GgufFile::open(path).metadata(), tokenizer);
  std::string origin = path.string();
  if (chat.source.empty()) origin += " has no tokenizer.chat_template";
  return text::chat_examples_with(tokenizer, std::move(chat), std::move(origin), template_file);
}

}  // namespace remat
