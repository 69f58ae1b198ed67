#include "text/chat_template.h"

#include <cmath>
#include <stdexcept>

#include "text/jinja_eval.h"
#include "text/vocab_files.h"

namespace remat::text {
namespace {

// JSON numbers without a fraction become integers, so `{{ 3 }}` prints 3 rather than 3.0.
jinja::Value from_json(const JsonValue& j) {
  using T = JsonValue::Type;
  switch (j.type) {
    case T::null:
      return jinja::Value::none();
    case T::boolean:
      return jinja::Value::of(j.boolean);
    case T::number:
      if (j.number == std::floor(j.number) && std::fabs(j.number) < 9.0e15)
        return jinja::Value::of(int64_t(j.number));
      return jinja::Value::of(j.number);
    case T::string:
      return jinja::Value::of(j.string);
    case T::array: {
      jinja::List l;
      for (const auto& e : j.array) l.push_back(from_json(e));
      return jinja::Value::of(std::move(l));
    }
    case T::object: {
      jinja::Dict d;
      for (const auto& [k, v] : j.object) d.emplace_back(k, from_json(v));
      return jinja::Value::of(std::move(d));
    }
  }
  return jinja::Value();
}

// A special token is written either as a string or as {"content": "..."}.
std::string token_text(const JsonValue* v) {
  if (!v) return "";
  if (v->type == JsonValue::Type::string) return v->string;
  if (const JsonValue* c = v->find("content"); c && c->type == JsonValue::Type::string)
    return c->string;
  return "";
}

std::filesystem::path config_path(const std::filesystem::path& tokenizer) {
  return std::filesystem::is_directory(tokenizer) ? tokenizer / "tokenizer_config.json" : tokenizer;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source) : source_(std::move(source)) {
  try {
    program_ = jinja::parse_template(source_);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("chat template: ") + e.what());
  }
}

std::string ChatTemplate::render(const JsonValue& messages, const ChatOptions& options) const {
  if (messages.type != JsonValue::Type::array)
    throw std::invalid_argument("chat template: messages must be a JSON array");
  const jinja::Dict variables = {
      {"messages", from_json(messages)},
      {"bos_token", jinja::Value::of(options.bos_token)},
      {"eos_token", jinja::Value::of(options.eos_token)},
      {"add_generation_prompt", jinja::Value::of(options.add_generation_prompt)},
  };
  try {
    return jinja::render(program_, variables);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("chat template: ") + e.what());
  }
}

ChatTemplateFile read_tokenizer_config(const std::filesystem::path& tokenizer) {
  const JsonValue config = read_json(config_path(tokenizer));
  const JsonValue* t = config.find("chat_template");
  ChatTemplateFile out;
  if (t && t->type == JsonValue::Type::array) {
    for (const auto& named : t->array) {
      const JsonValue* name = named.find("name");
      const JsonValue* body = named.find("template");
      if (name && body && name->type == JsonValue::Type::string && name->string == "default" &&
          body->type == JsonValue::Type::string)
        out.source = body->string;
    }
  } else if (t && t->type == JsonValue::Type::string) {
    out.source = t->string;
  }
  out.options.bos_token = token_text(config.find("bos_token"));
  out.options.eos_token = token_text(config.find("eos_token"));
  return out;
}

ChatTemplateFile load_chat_template(const std::filesystem::path& tokenizer) {
  ChatTemplateFile out = read_tokenizer_config(tokenizer);
  if (out.source.empty())
    throw std::invalid_argument(config_path(tokenizer).string() + " has no chat_template");
  return out;
}

}  // namespace remat::text
