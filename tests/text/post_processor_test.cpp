// tokenizer.json post-processors: what each adds around a text, and the refusals, which wait
// until the post-processor is applied so that the tokenizer still loads.
#include "text/post_processor.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "base/json.h"

using namespace remat;
using text::PostProcessor;
using text::TokenId;

namespace {

// Llama 3.1's: ByteLevel, then <|begin_of_text|> before the text.
constexpr const char* kLlama31 = R"({"type": "Sequence", "processors": [
  {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
  {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
              {"Sequence": {"id": "A", "type_id": 0}}],
   "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
            {"Sequence": {"id": "B", "type_id": 1}}],
   "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                             "tokens": ["<|begin_of_text|>"]}}}]})";

// A BERT-like template: a token before, one after (of two ids).
constexpr const char* kAround = R"({"type": "TemplateProcessing",
  "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
  "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]},
                     "[SEP]": {"id": "[SEP]", "ids": [102, 103], "tokens": ["[SEP]", "x"]}}})";

PostProcessor from(const std::string& json) {
  const JsonValue v = parse_json(json);
  return PostProcessor(&v, "tok.json");
}

}  // namespace

TEST_CASE("post-processors add what Hugging Face's single template adds", "[text]") {
  const std::vector<TokenId> text = {7, 8};
  CHECK(PostProcessor().apply(text) == text);
  CHECK(from("null").apply(text) == text);
  CHECK(from(R"({"type": "ByteLevel", "add_prefix_space": true})").apply(text) == text);
  CHECK(from(kLlama31).apply(text) == std::vector<TokenId>{128000, 7, 8});
  CHECK(from(kLlama31).before() == std::vector<TokenId>{128000});
  CHECK(from(kAround).apply(text) == std::vector<TokenId>{101, 7, 8, 102, 103});
  CHECK(from(kAround).after() == std::vector<TokenId>{102, 103});
  CHECK(from(kAround).apply({}) == std::vector<TokenId>{101, 102, 103});
  // A Sequence applies each processor to what the ones before produced.
  const std::string both =
      R"({"type": "Sequence", "processors": [)" + std::string(kLlama31) + "," + kAround + "]}";
  CHECK(from(both).apply(text) == std::vector<TokenId>{101, 128000, 7, 8, 102, 103});
}

TEST_CASE("unsupported post-processors load and are refused by name when applied", "[text]") {
  const auto refused = [](const std::string& json, const std::string& why) {
    const PostProcessor p = from(json);
    CHECK_THAT(p.refusal(), Catch::Contains(why));
    CHECK_THROWS_WITH(p.apply({1}), Catch::StartsWith("tok.json: ") && Catch::Contains(why));
  };
  refused(R"({"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]})",
          "post_processor BertProcessing is not supported");
  refused(R"({"type": "Sequence", "processors": [{"type": "RobertaProcessing"}]})",
          "post_processor RobertaProcessing is not supported");
  refused(R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "B", "type_id": 0}}],
              "special_tokens": {}})",
          "must hold the text ($A) exactly once");
  refused(
      R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}],
              "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})",
      "does not hold the text ($A)");
  refused(
      R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
              {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}})",
      "special token '<s>', which its special_tokens table does not give ids for");
  refused(R"({"type": "Sequence"})", "Sequence has no processors list");
}
