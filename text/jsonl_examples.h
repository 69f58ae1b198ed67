// The examples of a fine-tuning JSONL file: one JSON object per line, in one of three shapes that
// may be mixed in a file:
//   {"text": "..."}                                   a text trained whole
//   {"prompt": "...", "completion": "..."}            only the completion trained
//   {"messages": [{"role": "...", "content": "..."}]} a conversation, its assistant turns trained
// Roles are system, user, assistant and tool; a message's other keys (reasoning_content, ...)
// reach the chat template untouched, as do an object's keys other than the shape's, which are
// otherwise ignored. Blank lines are skipped. How each shape becomes tokens and which of them are
// trained is text/chat_examples.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"

namespace remat::text {

struct JsonlExample {
  enum class Shape { text, prompt_completion, messages };
  Shape shape = Shape::text;
  std::size_t line = 0;            // 1-based line of the file
  std::string text;                // Shape::text
  std::string prompt, completion;  // Shape::prompt_completion
  JsonValue messages;              // Shape::messages: a non-empty array of checked messages
};

// How JSON names a value's type in messages: "a string", "an array", ...
const char* json_type_name(JsonValue::Type type);

// `list` when it is a non-empty array of messages with known roles and string contents, else
// std::invalid_argument naming `key` ("\"chosen\" is empty", "chosen[1].role ...").
const JsonValue& checked_messages(const JsonValue& list, const std::string& key);

// Whether a JSONL line holds only spaces, tabs and a carriage return (skipped).
bool blank_jsonl_line(std::string_view line);

// Every example of `content`, in file order. Throws std::invalid_argument "ORIGIN: line N: ..."
// for a line that is not a JSON object, holds no shape or more than one, lacks a field or has
// one of the wrong type, or names an unknown role; "ORIGIN: ..." for a file with no example.
std::vector<JsonlExample> parse_jsonl_examples(std::string_view content, const std::string& origin);

}  // namespace remat::text
