// `remat chat-template`: renders a conversation with a Hugging Face chat template
// (text/chat_template.h), or a GGUF file's, and prints the exact text a model sees for it.
#include <cstdio>
#include <string>
#include <vector>

#include "base/json.h"
#include "cli_args.h"
#include "commands.h"
#include "formats/tokenizer_source.h"
#include "text/chat_template.h"
#include "text/vocab_files.h"

namespace remat::cli {
namespace {

CommandSpec chat_template_spec() {
  return {
      "chat-template",
      "",
      0,
      "Renders the conversation in --messages (a JSON array of {\"role\": ..., \"content\": ...}\n"
      "objects) with a chat template, as Hugging Face transformers' apply_chat_template does,\n"
      "and prints the text exactly, with no newline added. The template is the chat_template\n"
      "of DIR/tokenizer_config.json (whose bos_token and eos_token it also uses), the\n"
      "tokenizer.chat_template of a GGUF model file (with the text of its bos and eos tokens),\n"
      "or a Jinja FILE. `tools` is left undefined.\n",
      {{"--tokenizer", "DIR", "a folder with tokenizer_config.json, that file, or M.gguf", ""},
       {"--template", "FILE", "a Jinja chat template file instead of --tokenizer", ""},
       {"--messages", "FILE.json", "the conversation", ""},
       {"--add-generation-prompt", "", "end with the start of an assistant turn", ""},
       {"--bos-token", "TEXT", "bos_token for the template", "the tokenizer's"},
       {"--eos-token", "TEXT", "eos_token for the template", "the tokenizer's"}}};
}

text::ChatTemplateFile template_from(const Args& a) {
  const auto tokenizer = a.get("--tokenizer");
  const auto file = a.get("--template");
  if (tokenizer && file) throw UsageError("give --tokenizer DIR or --template FILE, not both");
  if (tokenizer) return load_chat_template_from(*tokenizer);
  if (!file) throw UsageError("--tokenizer DIR or --template FILE is required");
  return {text::read_file(*file), {}};
}

}  // namespace

int run_chat_template(const std::vector<std::string>& argv) {
  if (print_help_if_requested(argv, chat_template_spec())) return 0;
  Args a(argv, chat_template_spec());
  const auto messages_path = a.get("--messages");
  if (!messages_path) throw UsageError("--messages FILE.json is required");
  text::ChatTemplateFile file = template_from(a);
  if (const auto bos = a.get("--bos-token")) file.options.bos_token = *bos;
  if (const auto eos = a.get("--eos-token")) file.options.eos_token = *eos;
  file.options.add_generation_prompt = a.has("--add-generation-prompt");
  const JsonValue messages = text::read_json(*messages_path);
  const std::string rendered = text::ChatTemplate(file.source).render(messages, file.options);
  std::fwrite(rendered.data(), 1, rendered.size(), stdout);
  return 0;
}

}  // namespace remat::cli
