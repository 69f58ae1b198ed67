// Hugging Face's Split delimiter behaviors, on the examples its own tests use
// (tokenizer/normalizer.rs, pre_tokenizers/split.rs).
#include "text/split_behavior.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace remat::text;

namespace {

struct Piece {
  std::string text;
  bool first;
  bool operator==(const Piece& o) const { return text == o.text && first == o.first; }
};

std::vector<std::string> pieces(std::string_view pattern, bool literal, SplitBehavior b,
                                std::string_view text, bool invert = false) {
  SplitStage stage(pattern, literal, b, invert);
  std::vector<std::string> out;
  stage.split(text, true, [&](std::string_view p, bool) { out.emplace_back(p); });
  return out;
}

using S = std::vector<std::string>;

}  // namespace

TEST_CASE("Split's behaviors decide where delimiters go", "[text]") {
  const std::string text = "How are you  doing?";
  CHECK(pieces(" ", true, SplitBehavior::removed, text) == S{"How", "are", "you", "doing?"});
  CHECK(pieces(" ", true, SplitBehavior::isolated, text) ==
        S{"How", " ", "are", " ", "you", " ", " ", "doing?"});
  CHECK(pieces(" ", true, SplitBehavior::merged_with_previous, text) ==
        S{"How ", "are ", "you ", " ", "doing?"});
  CHECK(pieces(" ", true, SplitBehavior::merged_with_next, text) ==
        S{"How", " are", " you", " ", " doing?"});
  CHECK(pieces(" ", true, SplitBehavior::contiguous, text) ==
        S{"How", " ", "are", " ", "you", "  ", "doing?"});
}

TEST_CASE("Split reads regular expressions and inverts", "[text]") {
  CHECK(pieces("\\s+", false, SplitBehavior::removed, " Hey  friend ") == S{"Hey", "friend"});
  // Inverted: the text between words is the delimiter, and removed.
  CHECK(pieces("\\w+", false, SplitBehavior::removed, "Hey, friend!", true) == S{"Hey", "friend"});
  CHECK(pieces("\\w+", false, SplitBehavior::isolated, "Hey, friend!", true) ==
        S{"Hey", ", ", "friend", "!"});
  CHECK(pieces("-", true, SplitBehavior::merged_with_previous, "-a--b-") ==
        S{"-", "a-", "-", "b-"});
  CHECK(split_behavior("MergedWithNext") == SplitBehavior::merged_with_next);
  CHECK_FALSE(split_behavior("merged_with_next").has_value());
  CHECK_THROWS_AS(SplitStage("", true, SplitBehavior::removed, false), std::invalid_argument);
}

TEST_CASE("only the piece at the start of the text is first", "[text]") {
  SplitStage stage(" ", true, SplitBehavior::merged_with_next, false);
  std::vector<Piece> out;
  stage.split("a b", true, [&](std::string_view p, bool first) {
    out.push_back({std::string(p), first});
  });
  CHECK(out == std::vector<Piece>{{"a", true}, {" b", false}});
  out.clear();
  stage.split("a b", false, [&](std::string_view p, bool first) {
    out.push_back({std::string(p), first});
  });
  CHECK(out == std::vector<Piece>{{"a", false}, {" b", false}});
}
