// The tokenizer calls of the C API and their C++ wrapper: loading (and refusing what is missing or
// unsupported), encoding and decoding on a tokenizer the test writes and on GPT-2's own files,
// the ask-for-the-size idiom, and NULL arguments.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "remat/remat.hpp"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/text/llama_vocab_tests.h"
#include "tests/text/reference_data.h"

namespace fs = std::filesystem;

using remat::test::check_error;

namespace {

// A loaded tokenizer, freed at the end of the test.
struct Loaded {
  remat_tokenizer* tok = nullptr;
  explicit Loaded(const fs::path& path) {
    INFO(path.string());
    const remat_status s = remat_tokenizer_load(path.c_str(), &tok);
    INFO(remat_last_error());
    REQUIRE(s == REMAT_OK);
    REQUIRE(tok != nullptr);
  }
  ~Loaded() { remat_tokenizer_free(tok); }
};

// Encodes through the two-call idiom.
std::vector<uint32_t> encode(remat_tokenizer* tok, const std::string& text, int special = 1) {
  size_t count = 99;
  REQUIRE(remat_tokenizer_encode(tok, text.data(), text.size(), special, nullptr, 0, &count) ==
          REMAT_OK);
  std::vector<uint32_t> ids(count);
  size_t again = 0;
  REQUIRE(remat_tokenizer_encode(tok, text.data(), text.size(), special, ids.data(), ids.size(),
                                 &again) == REMAT_OK);
  CHECK(again == count);
  return ids;
}

std::string decode(const remat_tokenizer* tok, const std::vector<uint32_t>& ids) {
  size_t bytes = 99;
  REQUIRE(remat_tokenizer_decode(tok, ids.data(), ids.size(), nullptr, 0, &bytes) == REMAT_OK);
  std::string out(bytes, '\0');
  size_t again = 0;
  REQUIRE(remat_tokenizer_decode(tok, ids.data(), ids.size(), out.data(), out.size(), &again) ==
          REMAT_OK);
  CHECK(again == bytes);
  return out;
}

struct Tiny {
  fs::path dir = remat::test::scratch_dir("tiny_tokenizer");
  Tiny() { remat::test::write_tiny_tokenizer(dir); }
  ~Tiny() { fs::remove_all(dir); }
};

std::string all_bytes() {
  std::string s;
  for (int b = 0; b < 256; ++b) s += char(b);
  return s;
}

}  // namespace

TEST_CASE("tokenizer load refuses a missing path, an unsupported file and NULL") {
  remat_tokenizer* tok = reinterpret_cast<remat_tokenizer*>(&tok);  // must be reset to NULL
  check_error(remat_tokenizer_load("/nonexistent/tokenizer.json", &tok), REMAT_ERROR_IO,
              "/nonexistent/tokenizer.json: no such file or folder");
  CHECK(tok == nullptr);

  Tiny tiny;
  const fs::path bad = tiny.dir / "tokenizer.json";
  std::ofstream(bad) << R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})";
  tok = reinterpret_cast<remat_tokenizer*>(&tok);
  check_error(remat_tokenizer_load(bad.c_str(), &tok), REMAT_ERROR_INVALID_ARGUMENT,
              "tokenizer.json");
  CHECK(tok == nullptr);
  const fs::path text = tiny.dir / "notes.txt";
  std::ofstream(text) << "not a tokenizer\n";
  check_error(remat_tokenizer_load(text.c_str(), &tok), REMAT_ERROR_INVALID_ARGUMENT, "notes.txt");
  CHECK(tok == nullptr);
  // A folder without any tokenizer files.
  const fs::path empty = tiny.dir / "empty";
  fs::create_directories(empty);
  CHECK(remat_tokenizer_load(empty.c_str(), &tok) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(tok == nullptr);

  check_error(remat_tokenizer_load(nullptr, &tok), REMAT_ERROR_INVALID_ARGUMENT, "path is NULL");
  check_error(remat_tokenizer_load(tiny.dir.c_str(), nullptr), REMAT_ERROR_INVALID_ARGUMENT,
              "tokenizer is NULL");
  remat_tokenizer_free(nullptr);
}

TEST_CASE("a tokenizer the test writes encodes with its merges and decodes back exactly") {
  Tiny tiny;
  Loaded t(tiny.dir);
  uint32_t vocab = 0;
  REQUIRE(remat_tokenizer_vocab_size(t.tok, &vocab) == REMAT_OK);
  CHECK(vocab == 261);

  // " hello" -> space, "hell", "o"; " hat" -> "\u0120h" (the fourth merge), "a", "t".
  const std::string text = "hello hello hat<|endoftext|>";
  CHECK(encode(t.tok, text) == std::vector<uint32_t>{258, 'o', ' ', 258, 'o', 259, 'a', 't', 260});
  const auto plain = encode(t.tok, text, 0);
  CHECK(plain.size() > 9);
  CHECK(std::find(plain.begin(), plain.end(), 260u) == plain.end());
  CHECK(decode(t.tok, encode(t.tok, text)) == text);
  CHECK(decode(t.tok, plain) == text);

  // Every byte, invalid UTF-8 included, survives the round trip; nothing is NUL-terminated.
  const std::string bytes = all_bytes() + "\xff\xfe hello \xc3";
  const auto ids = encode(t.tok, bytes);
  CHECK(decode(t.tok, ids) == bytes);
  CHECK(encode(t.tok, "").empty());
  CHECK(decode(t.tok, {}).empty());
}

TEST_CASE("tokenizer outputs report their size and refuse a buffer too small") {
  Tiny tiny;
  Loaded t(tiny.dir);
  const std::string text = "hello hello hat";
  size_t count = 0;
  REQUIRE(remat_tokenizer_encode(t.tok, text.data(), text.size(), 1, nullptr, 0, &count) ==
          REMAT_OK);
  REQUIRE(count == 8);

  std::vector<uint32_t> ids(count, 7777);
  size_t got = 0;
  check_error(
      remat_tokenizer_encode(t.tok, text.data(), text.size(), 1, ids.data(), count - 1, &got),
      REMAT_ERROR_INVALID_ARGUMENT, "room for 7");
  CHECK(got == count);                               // the size, even on failure
  CHECK(ids == std::vector<uint32_t>(count, 7777));  // and nothing written
  check_error(remat_tokenizer_encode(t.tok, text.data(), text.size(), 1, nullptr, 4, &got),
              REMAT_ERROR_INVALID_ARGUMENT, "ids is NULL");

  REQUIRE(remat_tokenizer_encode(t.tok, text.data(), text.size(), 1, ids.data(), ids.size(),
                                 &got) == REMAT_OK);
  size_t bytes = 0;
  REQUIRE(remat_tokenizer_decode(t.tok, ids.data(), ids.size(), nullptr, 0, &bytes) == REMAT_OK);
  CHECK(bytes == text.size());
  std::string out(bytes + 4, '#');
  check_error(remat_tokenizer_decode(t.tok, ids.data(), ids.size(), out.data(), bytes - 1, &got),
              REMAT_ERROR_INVALID_ARGUMENT, "room for 14");
  CHECK(got == bytes);
  CHECK(out == std::string(bytes + 4, '#'));
  // A larger buffer is fine; bytes past the output are left alone (no NUL is added).
  REQUIRE(remat_tokenizer_decode(t.tok, ids.data(), ids.size(), out.data(), out.size(), &got) ==
          REMAT_OK);
  CHECK(out == text + "####");
  check_error(remat_tokenizer_decode(t.tok, ids.data(), ids.size(), nullptr, 3, &got),
              REMAT_ERROR_INVALID_ARGUMENT, "out is NULL");
}

TEST_CASE("tokenizer calls refuse NULL arguments and ids that are no token") {
  Tiny tiny;
  Loaded t(tiny.dir);
  uint32_t vocab = 0, id = 5;
  size_t n = 0;
  char out[8];
  check_error(remat_tokenizer_vocab_size(nullptr, &vocab), REMAT_ERROR_INVALID_ARGUMENT,
              "tokenizer is NULL");
  check_error(remat_tokenizer_vocab_size(t.tok, nullptr), REMAT_ERROR_INVALID_ARGUMENT,
              "vocab_size is NULL");
  check_error(remat_tokenizer_encode(nullptr, "a", 1, 1, nullptr, 0, &n),
              REMAT_ERROR_INVALID_ARGUMENT, "tokenizer is NULL");
  check_error(remat_tokenizer_encode(t.tok, "a", 1, 1, nullptr, 0, nullptr),
              REMAT_ERROR_INVALID_ARGUMENT, "count is NULL");
  check_error(remat_tokenizer_encode(t.tok, nullptr, 3, 1, nullptr, 0, &n),
              REMAT_ERROR_INVALID_ARGUMENT, "text is NULL");
  REQUIRE(remat_tokenizer_encode(t.tok, nullptr, 0, 1, nullptr, 0, &n) == REMAT_OK);
  CHECK(n == 0);
  check_error(remat_tokenizer_decode(nullptr, &id, 1, out, sizeof out, &n),
              REMAT_ERROR_INVALID_ARGUMENT, "tokenizer is NULL");
  check_error(remat_tokenizer_decode(t.tok, &id, 1, out, sizeof out, nullptr),
              REMAT_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  check_error(remat_tokenizer_decode(t.tok, nullptr, 2, out, sizeof out, &n),
              REMAT_ERROR_INVALID_ARGUMENT, "ids is NULL");
  const uint32_t bad[] = {5, 261};
  check_error(remat_tokenizer_decode(t.tok, bad, 2, out, sizeof out, &n),
              REMAT_ERROR_INVALID_ARGUMENT, "261");
  // The tokenizer still works after every refusal.
  CHECK(decode(t.tok, {104, 256}) == "hhe");
}

TEST_CASE("GPT-2's tokenizer files encode and decode through the C API") {
  if (!remat::test::have_gpt2_files()) return;
  Loaded t(remat::test::gpt2_files());
  uint32_t vocab = 0;
  REQUIRE(remat_tokenizer_vocab_size(t.tok, &vocab) == REMAT_OK);
  CHECK(vocab == 50257);
  CHECK(encode(t.tok, "Hello world") == std::vector<uint32_t>{15496, 995});
  CHECK(encode(t.tok, "<|endoftext|>") == std::vector<uint32_t>{50256});
  CHECK(encode(t.tok, "<|endoftext|>", 0).size() > 1);
  const std::string text =
      "The planner keeps block inputs; caf\xc3\xa9, na\xc3\xafve, \xe6\x97\xa5\xe6\x9c\xac, "
      "\xf0\x9f\x99\x82 and 12345.\n\n  tabs\there" +
      all_bytes();
  const auto ids = encode(t.tok, text);
  CHECK(ids.size() < text.size());
  CHECK(decode(t.tok, ids) == text);
}

TEST_CASE("the C++ Tokenizer wraps the calls and throws the C API's errors") {
  Tiny tiny;
  auto t = remat::api::Tokenizer::load(tiny.dir.string());
  CHECK(t.vocab_size() == 261);
  const auto ids = t.encode("hello<|endoftext|>");
  CHECK(ids == std::vector<uint32_t>{258, 'o', 260});
  CHECK(t.encode("<|endoftext|>", false).size() == 13);
  CHECK(t.decode(ids) == "hello<|endoftext|>");
  CHECK(t.encode("").empty());
  try {
    remat::api::Tokenizer::load((tiny.dir / "missing").string());
    FAIL("loading a missing path succeeded");
  } catch (const remat::api::Error& e) {
    CHECK(e.status() == REMAT_ERROR_IO);
    CHECK(std::string(e.what()).find("missing") != std::string::npos);
  }
  const std::vector<uint32_t> bad{300};
  CHECK_THROWS_AS(t.decode(bad), remat::api::Error);
}

TEST_CASE("a GGUF file's tokenizer encodes through the C API as llama.cpp's tests expect") {
  if (!remat::test::have_llama_cpp_source()) return;
  const fs::path qwen2 = remat::test::llama_test_vocabulary("qwen2");
  Loaded t(qwen2);
  uint32_t vocab = 0;
  REQUIRE(remat_tokenizer_vocab_size(t.tok, &vocab) == REMAT_OK);
  CHECK(vocab == 151936);
  // llama.cpp's test texts, with the ids Hugging Face gives them (special tokens off).
  for (const remat::test::VocabTest& v : remat::test::llama_vocabulary_tests(qwen2)) {
    INFO("text '" << v.text << "'");
    CHECK(encode(t.tok, v.text, 0) == v.ids);
  }
  // Control tokens with allow_special only, user-defined ones always.
  CHECK(encode(t.tok, "<|im_start|>") == std::vector<uint32_t>{151644});
  CHECK(encode(t.tok, "<|im_start|>", 0).size() > 1);
  CHECK(encode(t.tok, "[PAD151650]", 0) == std::vector<uint32_t>{151650});
  CHECK(decode(t.tok, encode(t.tok, "Hello<|im_end|> wörld")) == "Hello<|im_end|> wörld");
  // A WordPiece file (a model remat does not read) is refused naming the key.
  const fs::path wpm = remat::test::llama_test_vocabulary("bert-bge");
  remat_tokenizer* tok = nullptr;
  CHECK(remat_tokenizer_load(wpm.c_str(), &tok) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(tok == nullptr);
  CHECK(std::string(remat_last_error()).find("tokenizer.ggml.model 'bert' is not supported") !=
        std::string::npos);
}
