// Chat templates: the Jinja program in a Hugging Face tokenizer_config.json that turns a
// conversation into the text a model was trained on. remat renders them with its own small Jinja
// interpreter (text/jinja_*.h), matching @huggingface/jinja byte for byte on real templates
// (tests/text/chat_template_test.cpp).
//
// Supported: {{ }}, {% %}, {# #}, `-` whitespace control, trim_blocks and lstrip_blocks (always
// on, as Hugging Face renders); set (names, tuples, namespace attributes, {% set %}...{% endset
// %}), if/elif/else, for/else with loop.index/index0/revindex/first/last/length/previtem/nextitem;
// literals (string, integer, float, bool, none, list, dict, tuple), ~ + - * / // % **,
// comparisons, and/or/not, in/not in, `is [not]` defined/undefined/none/string/number/integer/
// boolean/true/false/mapping/sequence/iterable, attributes, subscripts, slices, ternaries;
// string methods strip/lstrip/rstrip/split/startswith/endswith/upper/lower/replace, dict methods
// items/get/keys/values; filters trim length count tojson string join first last default upper
// lower replace items list; namespace(), range(), raise_exception(msg).
// Not supported (a one-line error naming line and column): macro, call, filter blocks, include,
// break/continue, `for ... if`, tests with arguments, other filters and methods.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "base/json.h"
#include "text/jinja_parser.h"

namespace remat::text {

struct ChatOptions {
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
};

class ChatTemplate {
 public:
  // Parses the template; throws std::invalid_argument "chat template: line L, column C: ...".
  explicit ChatTemplate(std::string source);

  // `messages` is a JSON array of objects ({"role": ..., "content": ...}); `tools` stays
  // undefined. Throws std::invalid_argument "chat template: line L, column C: ..." when the
  // template fails or raises.
  std::string render(const JsonValue& messages, const ChatOptions& options) const;

 private:
  std::string source_;
  jinja::Nodes program_;
};

struct ChatTemplateFile {
  std::string source;
  ChatOptions options;  // bos_token and eos_token from the configuration when it has them
};

// The chat_template, bos_token and eos_token of DIR/tokenizer_config.json (or of that file
// itself when given one). A template given as a list of named templates uses the "default" one.
ChatTemplateFile load_chat_template(const std::filesystem::path& tokenizer);
// The same, except that a configuration without chat_template gives an empty source.
ChatTemplateFile read_tokenizer_config(const std::filesystem::path& tokenizer);

}  // namespace remat::text
