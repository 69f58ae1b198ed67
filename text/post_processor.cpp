#include "text/post_processor.h"

#include <cmath>
#include <stdexcept>

namespace remat::text {
namespace {

using Type = JsonValue::Type;

std::string type_of(const JsonValue& v) {
  const JsonValue* t = v.find("type");
  return t && t->type == Type::string ? t->string : "(no type)";
}

[[noreturn]] void refuse(const std::string& what) {
  throw std::invalid_argument(what);
}

// The ids of special token `name` in TemplateProcessing's "special_tokens" table.
std::vector<TokenId> special_ids(const JsonValue& processor, const std::string& name) {
  const JsonValue* table = processor.find("special_tokens");
  const JsonValue* entry = table ? table->find(name) : nullptr;
  const JsonValue* ids = entry ? entry->find("ids") : nullptr;
  if (!ids || ids->type != Type::array || ids->array.empty())
    refuse("TemplateProcessing names special token '" + name +
           "', which its special_tokens table does not give ids for");
  std::vector<TokenId> out;
  for (const JsonValue& id : ids->array) {
    if (id.type != Type::number || id.number < 0 || id.number != std::floor(id.number) ||
        id.number > 4294967295.0)
      refuse("TemplateProcessing special token '" + name + "' has an id that is not a token id");
    out.push_back(TokenId(id.number));
  }
  return out;
}

}  // namespace

PostProcessor::PostProcessor(const JsonValue* processor, std::string origin)
    : origin_(std::move(origin)) {
  if (!processor || processor->type == Type::null) return;
  try {
    add(*processor);
  } catch (const std::invalid_argument& e) {
    before_.clear();
    after_.clear();
    refusal_ = e.what();
  }
}

PostProcessor PostProcessor::refusing(std::string origin, std::string why) {
  PostProcessor p;
  p.origin_ = std::move(origin);
  p.refusal_ = std::move(why);
  return p;
}

void PostProcessor::add(const JsonValue& processor) {
  const std::string type = type_of(processor);
  if (type == "ByteLevel") return;  // offsets only; the ids are untouched
  if (type == "TemplateProcessing") return add_template(processor);
  if (type != "Sequence")
    refuse("post_processor " + type + " is not supported (only ByteLevel, TemplateProcessing)");
  const JsonValue* list = processor.find("processors");
  if (!list || list->type != Type::array) refuse("post_processor Sequence has no processors list");
  for (const JsonValue& p : list->array) add(p);
}

// Each later processor wraps what the earlier ones produced, as Hugging Face's Sequence does.
void PostProcessor::add_template(const JsonValue& processor) {
  const JsonValue* single = processor.find("single");
  if (!single || single->type != Type::array)
    refuse("TemplateProcessing has no \"single\" template list");
  std::vector<TokenId> before, after;
  bool seen_text = false;
  for (const JsonValue& piece : single->array) {
    if (const JsonValue* s = piece.find("Sequence")) {
      const JsonValue* id = s->find("id");
      if (!id || id->type != Type::string || id->string != "A" || seen_text)
        refuse("TemplateProcessing's single template must hold the text ($A) exactly once");
      seen_text = true;
    } else if (const JsonValue* t = piece.find("SpecialToken")) {
      const JsonValue* id = t->find("id");
      if (!id || id->type != Type::string) refuse("TemplateProcessing SpecialToken has no id");
      const auto ids = special_ids(processor, id->string);
      auto& side = seen_text ? after : before;
      side.insert(side.end(), ids.begin(), ids.end());
    } else {
      refuse(
          "TemplateProcessing's single template holds a piece that is neither Sequence nor "
          "SpecialToken");
    }
  }
  if (!seen_text) refuse("TemplateProcessing's single template does not hold the text ($A)");
  before_.insert(before_.begin(), before.begin(), before.end());
  after_.insert(after_.end(), after.begin(), after.end());
}

std::vector<TokenId> PostProcessor::apply(const std::vector<TokenId>& ids) const {
  if (!refusal_.empty()) throw std::invalid_argument(origin_ + ": " + refusal_);
  std::vector<TokenId> out;
  out.reserve(before_.size() + ids.size() + after_.size());
  out.insert(out.end(), before_.begin(), before_.end());
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), after_.begin(), after_.end());
  return out;
}

}  // namespace remat::text
