// `remat tokenize` / `remat detokenize` with OpenAI's GPT-2 files: ids printed or written as an
// llm.c token file, both decoded back to the exact input; bad input exits 2 with one line.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;
namespace fs = std::filesystem;

TEST_CASE("remat tokenize prints GPT-2 ids and detokenize restores the bytes") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("tokenize_cli");
  const std::string text = "Hello world<|endoftext|> 's  \n\n  x\xFF\xE2\x82";
  d.write("in.txt", text);
  const auto ids = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + d.quoted("in.txt"));
  INFO(ids.err);
  REQUIRE(ids.exit_code == 0);
  // tiktoken's gpt2 encoding gives 15496 995 50256 705 82 220 220 628 220 2124 for the valid text.
  CHECK(ids.out.rfind("15496 995 50256 705 82 220 220 628 220 2124 ", 0) == 0);
  d.write("ids.txt", ids.out);
  const auto back =
      run_remat("detokenize " + remat::test::gpt2_tokenizer_flag() + d.quoted("ids.txt"));
  CHECK(back.exit_code == 0);
  CHECK(back.out == text);
  const auto plain =
      run_remat("tokenize --no-special " + remat::test::gpt2_tokenizer_flag() + d.quoted("in.txt"));
  CHECK(plain.out.find(" 50256 ") == std::string::npos);
  // Braces: run_command redirects the whole line's standard input from /dev/null.
  const auto piped = remat::test::run_command("{ printf 'a b' | '" REMAT_CLI_PATH "' tokenize " +
                                              remat::test::gpt2_tokenizer_flag() + "-; }");
  CHECK(piped.out == "64 275\n");
}

TEST_CASE("remat tokenize --out writes an llm.c token file that detokenize reads") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("tokenize_cli");
  const auto r = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--out " +
                           d.quoted("gpl.bin") + " /usr/share/common-licenses/GPL-3");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("tokens") != std::string::npos);
  const std::string bin = d.read("gpl.bin");
  REQUIRE(bin.size() > 1024);
  int32_t header[3];
  std::memcpy(header, bin.data(), sizeof header);
  CHECK(header[0] == 20240520);
  CHECK(header[1] == 1);
  CHECK(std::size_t(header[2]) * 2 + 1024 == bin.size());
  const auto back =
      run_remat("detokenize " + remat::test::gpt2_tokenizer_flag() + d.quoted("gpl.bin"));
  std::ifstream in("/usr/share/common-licenses/GPL-3", std::ios::binary);
  CHECK(back.out == std::string(std::istreambuf_iterator<char>(in), {}));
}

TEST_CASE("bad tokenize and detokenize input exits 2 with one line") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("tokenize_cli");
  d.write("in.txt", "text");
  d.write("bad_ids.txt", "15496 abc");
  d.write("big_id.txt", "15496 50257");
  const std::string t = remat::test::gpt2_tokenizer_flag();
  const std::pair<std::string, std::string> cases[] = {
      {"tokenize " + d.quoted("in.txt"), "--tokenizer PATH is required"},
      {"tokenize " + t, "no input"},
      {"tokenize " + t + d.quoted("missing.txt"), "missing.txt: cannot open (No such file"},
      {"tokenize --tokenizer " + d.quoted("in.txt") + " " + d.quoted("in.txt"), "not a tokenizer"},
      {"tokenize " + t + "--out " + d.quoted("no/such/dir/x.bin") + " " + d.quoted("in.txt"),
       "cannot write"},
      {"detokenize " + t + d.quoted("bad_ids.txt"), "token 1 'abc' is not a token id"},
      {"detokenize " + t + d.quoted("big_id.txt"),
       "token 1 is id 50257, which is not in the vocabulary"},
  };
  for (const auto& [args, fragment] : cases) {
    const auto r = run_remat(args);
    INFO("remat " << args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(r.out.empty());
  }
  CHECK_FALSE(fs::exists(d.path() / "no"));
}
