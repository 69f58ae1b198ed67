// Metaspace as Hugging Face's pre_tokenizers/metaspace.rs defines it: spaces replaced, the
// replacement prepended by scheme, and the split before each replacement.
#include "text/metaspace.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace remat::text;

namespace {

using S = std::vector<std::string>;

S pieces(PrependScheme scheme, bool split, std::string_view text, bool first = true) {
  MetaspaceStage stage("\u2581", scheme, split);
  S out;
  stage.split(text, first, [&](std::string_view p, bool) { out.emplace_back(p); });
  return out;
}

}  // namespace

TEST_CASE("Metaspace replaces spaces and splits before each replacement", "[text]") {
  CHECK(pieces(PrependScheme::always, true, "Hey friend!") == S{"\u2581Hey", "\u2581friend!"});
  CHECK(pieces(PrependScheme::always, true, "Hey   friend!") ==
        S{"\u2581Hey", "\u2581", "\u2581", "\u2581friend!"});
  CHECK(pieces(PrependScheme::always, false, "Hey   friend!") ==
        S{"\u2581Hey\u2581\u2581\u2581friend!"});
  // A text that starts with a space (or the replacement) gets no second one.
  CHECK(pieces(PrependScheme::always, true, " Hey") == S{"\u2581Hey"});
  CHECK(pieces(PrependScheme::always, true, "\u2581Hey") == S{"\u2581Hey"});
}

TEST_CASE("Metaspace prepends always, at the start of the text only, or never", "[text]") {
  CHECK(pieces(PrependScheme::first, false, "Hey you") == S{"\u2581Hey\u2581you"});
  CHECK(pieces(PrependScheme::first, false, "Hey you", false) == S{"Hey\u2581you"});
  CHECK(pieces(PrependScheme::always, false, "Hey you", false) == S{"\u2581Hey\u2581you"});
  CHECK(pieces(PrependScheme::never, true, "Hey you") == S{"Hey", "\u2581you"});
  CHECK(prepend_scheme("first") == PrependScheme::first);
  CHECK_FALSE(prepend_scheme("First").has_value());
  CHECK_THROWS_AS(MetaspaceStage("ab", PrependScheme::always, true), std::invalid_argument);
}
