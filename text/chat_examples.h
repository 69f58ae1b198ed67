// How the examples of a fine-tuning JSONL file (text/jsonl_examples.h) become token ids and a
// loss mask. A token is trained when the model learns to predict it: the targets of a row are its
// tokens shifted by one, and a target is kept where the mask is 1.
//
//   text                the tokenizer's encoding of the text with what its post-processor adds
//                       (as Hugging Face's `tokenizer(text)`: Llama 3.1 puts <|begin_of_text|>
//                       first), then the eos token; every token trained.
//   prompt, completion  with a chat template, the conversation [user: prompt, assistant:
//                       completion]; without one, the encoding of prompt + completion (no
//                       separator, post-processor tokens added as for text) then eos, trained from
//                       the first token whose first byte lies in the completion to the end.
//   messages            the chat template's rendering F of the whole conversation
//                       (add_generation_prompt false), encoded with special tokens recognised
//                       and nothing added. For each assistant message i, P is the rendering of
//                       messages[:i] with add_generation_prompt and Q that of messages[:i+1]
//                       without; P must be a prefix of Q and Q of F, and the bytes F[|P|, |Q|)
//                       are trained. A token is trained when its first byte lies in such a span.
//                       Without a chat template the example is refused.
//
// The chat template renders with the bos_token and eos_token of the tokenizer's configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/chat_template.h"
#include "text/jsonl_examples.h"
#include "text/tokenizer.h"

namespace remat::text {

struct MaskedTokens {
  std::vector<TokenId> ids;
  std::vector<uint8_t> mask;  // per token: 1 when it is trained
  std::size_t line = 0;       // the example's line in its file
};

class ChatExamples {
 public:
  // `tokenizer` is borrowed and must outlive this. `options` holds the bos_token and eos_token
  // text; the eos token must be a special token of the tokenizer when a text or template-less
  // prompt/completion example needs it. `chat` is the template, if any; `template_origin` names
  // where it came from in errors.
  ChatExamples(Tokenizer& tokenizer, ChatOptions options, std::optional<ChatTemplate> chat,
               std::string template_origin);

  // Throws std::invalid_argument (without file or line) when the example cannot be encoded.
  MaskedTokens encode(const JsonlExample& example);
  // A conversation as a "messages" example encodes it, but with only the assistant turns from
  // messages[first_trained] on trained: a prompt of messages and the answer that follows it
  // (preference data, formats/preference_rows.h).
  MaskedTokens encode_conversation(const JsonValue& messages, std::size_t first_trained);
  // Every example in order; errors are "ORIGIN: line N: ...".
  std::vector<MaskedTokens> encode_all(const std::vector<JsonlExample>& examples,
                                       const std::string& origin);

  // The examples of a JSONL file (text/jsonl_examples.h), in order; errors name the file and,
  // for an example, its line.
  std::vector<MaskedTokens> encode_file(const std::filesystem::path& jsonl);

  bool has_template() const { return chat_.has_value(); }

 private:
  MaskedTokens encode_text(const std::string& text);
  MaskedTokens encode_prompt_completion(const std::string& prompt, const std::string& completion);
  MaskedTokens encode_messages(const JsonValue& messages, std::size_t first_trained = 0);
  TokenId eos() const;

  Tokenizer& tokenizer_;
  ChatOptions options_;
  std::optional<ChatTemplate> chat_;
  std::string template_origin_;
};

// ChatExamples for the tokenizer at `tokenizer_path` (a folder, or a file in one): the folder's
// tokenizer_config.json gives bos_token, eos_token and chat_template when it has them;
// `template_file` (a Jinja file, --chat-template) replaces the chat template. Without a
// configuration, bos_token and eos_token are <|endoftext|> when the tokenizer has it, as
// Hugging Face's GPT-2 tokenizer defaults them.
ChatExamples chat_examples_for(Tokenizer& tokenizer, const std::filesystem::path& tokenizer_path,
                               const std::optional<std::filesystem::path>& template_file);

// ChatExamples for a configuration already read (`config`: its template, empty for none, and
// its bos_token and eos_token), which `origin` names in errors (for a missing template, `origin`
// says so: "<file> has no chat_template"); `template_file` replaces the template.
ChatExamples chat_examples_with(Tokenizer& tokenizer, ChatTemplateFile config, std::string origin,
                                const std::optional<std::filesystem::path>& template_file);

}  // namespace remat::text
