// Reading fine-tuning JSONL files: the three shapes, mixed; blank lines; and one error naming the
// file and line for each kind of malformed line.
#include "text/jsonl_examples.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

using namespace remat;
using Shape = text::JsonlExample::Shape;

TEST_CASE("JSONL examples of every shape are read in file order with their lines", "[text]") {
  const std::string file =
      "{\"text\": \"plain\", \"id\": 7}\n"
      "\n"
      "{\"prompt\": \"2+2=\", \"completion\": \"4\"}\r\n"
      "  \t\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", "
      "\"content\": \"u\"}, {\"role\": \"assistant\", \"content\": \"a\", \"reasoning_content\": "
      "\"r\"}, {\"role\": \"tool\", \"content\": \"t\"}]}";
  const auto examples = text::parse_jsonl_examples(file, "f.jsonl");
  REQUIRE(examples.size() == 3);
  CHECK(examples[0].shape == Shape::text);
  CHECK(examples[0].text == "plain");
  CHECK(examples[0].line == 1);
  CHECK(examples[1].shape == Shape::prompt_completion);
  CHECK(examples[1].prompt == "2+2=");
  CHECK(examples[1].completion == "4");
  CHECK(examples[1].line == 3);
  CHECK(examples[2].shape == Shape::messages);
  CHECK(examples[2].line == 5);
  REQUIRE(examples[2].messages.array.size() == 4);
  CHECK(examples[2].messages.array[2].find("reasoning_content")->string == "r");
}

TEST_CASE("a malformed JSONL line is an error naming the file and the line", "[text]") {
  const auto error = [](const std::string& line, const std::string& why) {
    INFO(line);
    const std::string file = "{\"text\": \"fine\"}\n\n" + line + "\n{\"text\": \"fine\"}\n";
    CHECK_THROWS_WITH(text::parse_jsonl_examples(file, "data/ft.jsonl"),
                      Catch::StartsWith("data/ft.jsonl: line 3: ") && Catch::Contains(why));
  };
  error("{\"text\": \"unterminated}", "not JSON (JSON: ");
  error("not json at all", "not JSON");
  error("[1, 2]", "is an array, not a JSON object");
  error("{\"txt\": \"typo\"}", "holds no example shape");
  error("{\"text\": \"a\", \"messages\": []}", "holds more than one example shape");
  error("{\"text\": 12}", "\"text\" is a number, not a string");
  error("{\"prompt\": \"p\"}", "missing \"completion\"");
  error("{\"completion\": \"c\"}", "missing \"prompt\"");
  error("{\"prompt\": \"p\", \"completion\": null}", "\"completion\" is null, not a string");
  error("{\"messages\": {\"role\": \"user\"}}", "\"messages\" is an object, not an array");
  error("{\"messages\": []}", "\"messages\" is empty");
  error("{\"messages\": [\"hi\"]}", "messages[0] is a string, not an object");
  error("{\"messages\": [{\"role\": \"user\"}]}", "missing messages[0].content");
  error("{\"messages\": [{\"content\": \"x\"}]}", "missing messages[0].role");
  error(
      "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"assistant\", "
      "\"content\": [\"x\"]}]}",
      "messages[1].content is an array, not a string");
  error("{\"messages\": [{\"role\": \"human\", \"content\": \"x\"}]}",
        "messages[0].role 'human' is not a known role (system, user, assistant or tool)");
  CHECK_THROWS_WITH(text::parse_jsonl_examples("\n \n", "empty.jsonl"),
                    Catch::StartsWith("empty.jsonl: holds no example"));
}
