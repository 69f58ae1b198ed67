#include "text/jsonl_examples.h"

#include <stdexcept>

namespace remat::text {

using Type = JsonValue::Type;

const char* json_type_name(Type t) {
  switch (t) {
    case Type::null:
      return "null";
    case Type::boolean:
      return "a boolean";
    case Type::number:
      return "a number";
    case Type::string:
      return "a string";
    case Type::array:
      return "an array";
    case Type::object:
      return "an object";
  }
  return "?";
}

namespace {

// The string at `key` of `object`; `where` names the object in the error ("" for the line).
std::string string_field(const JsonValue& object, const std::string& key,
                         const std::string& where) {
  const JsonValue* v = object.find(key);
  const std::string name = where.empty() ? "\"" + key + "\"" : where + "." + key;
  if (!v) throw std::invalid_argument("missing " + name);
  if (v->type != Type::string)
    throw std::invalid_argument(name + " is " + json_type_name(v->type) + ", not a string");
  return v->string;
}

void check_message(const JsonValue& m, const std::string& key, std::size_t index) {
  const std::string where = key + "[" + std::to_string(index) + "]";
  if (m.type != Type::object)
    throw std::invalid_argument(where + " is " + json_type_name(m.type) +
                                ", not an object {\"role\": ..., \"content\": ...}");
  const std::string role = string_field(m, "role", where);
  if (role != "system" && role != "user" && role != "assistant" && role != "tool")
    throw std::invalid_argument(where + ".role '" + role +
                                "' is not a known role (system, user, assistant or tool)");
  string_field(m, "content", where);
}

}  // namespace

const JsonValue& checked_messages(const JsonValue& list, const std::string& key) {
  if (list.type != Type::array)
    throw std::invalid_argument("\"" + key + "\" is " + json_type_name(list.type) +
                                ", not an array of messages");
  if (list.array.empty()) throw std::invalid_argument("\"" + key + "\" is empty");
  for (std::size_t i = 0; i < list.array.size(); ++i) check_message(list.array[i], key, i);
  return list;
}

bool blank_jsonl_line(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

namespace {

// The example one line holds; errors without the file and line, which the caller adds.
JsonlExample parse_line(std::string_view line) {
  JsonValue object;
  try {
    object = parse_json(line);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("not JSON (") + e.what() + ")");
  }
  if (object.type != Type::object)
    throw std::invalid_argument(std::string("is ") + json_type_name(object.type) +
                                ", not a JSON object");
  const bool text = object.find("text"), messages = object.find("messages");
  const bool prompt = object.find("prompt") || object.find("completion");
  if (int(text) + int(messages) + int(prompt) != 1)
    throw std::invalid_argument(
        std::string(text || messages || prompt ? "holds more than one" : "holds no") +
        " example shape: give exactly one of \"text\", \"prompt\" with \"completion\", or "
        "\"messages\"");
  JsonlExample e;
  if (text) {
    e.text = string_field(object, "text", "");
  } else if (prompt) {
    e.shape = JsonlExample::Shape::prompt_completion;
    e.prompt = string_field(object, "prompt", "");
    e.completion = string_field(object, "completion", "");
  } else {
    e.shape = JsonlExample::Shape::messages;
    e.messages = checked_messages(*object.find("messages"), "messages");
  }
  return e;
}

}  // namespace

std::vector<JsonlExample> parse_jsonl_examples(std::string_view content,
                                               const std::string& origin) {
  std::vector<JsonlExample> examples;
  std::size_t number = 0;
  for (std::size_t start = 0; start < content.size();) {
    std::size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    const std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++number;
    if (blank_jsonl_line(line)) continue;
    try {
      examples.push_back(parse_line(line));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(origin + ": line " + std::to_string(number) + ": " + e.what());
    }
    examples.back().line = number;
  }
  if (examples.empty())
    throw std::invalid_argument(origin +
                                ": holds no example (JSONL: one JSON object on each line)");
  return examples;
}

}  // namespace remat::text
