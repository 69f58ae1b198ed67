// `remat train` on tokens (text through a GPT-2 tokenizer, an llm.c token file, nanoGPT's raw
// uint16) and `remat generate`: small models with GPT-2's 50257-id vocabulary on lavapipe.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

const std::string kSmall =
    "--layers 1 --dim 32 --heads 2 --vocab 50257 --ctx 16 --seq 16 --batch 2 ";

// The first loss `remat train` reports ("step 1/N  loss X ...").
std::string first_loss(const std::string& out) {
  const auto at = out.find("step 1/");
  if (at == std::string::npos) return "";
  const auto loss = out.find("loss ", at);
  return out.substr(loss + 5, out.find(' ', loss + 5) - loss - 5);
}

}  // namespace

TEST_CASE("remat train reads tokens from text, an llm.c file and raw uint16 alike") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("token_training");
  const std::string text = "/usr/share/common-licenses/GPL-3";
  const auto tok = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--out " +
                             d.quoted("gpl.bin") + " " + text);
  REQUIRE(tok.exit_code == 0);
  // nanoGPT's layout: the same uint16 ids without the header.
  d.write("gpl.u16", d.read("gpl.bin").substr(1024));

  const auto from_text = run_remat("train " + kSmall + "--steps 2 " +
                                   remat::test::gpt2_tokenizer_flag() + "--data " + text);
  INFO(from_text.err);
  REQUIRE(from_text.exit_code == 0);
  CHECK(from_text.out.find(" tokens, unigram entropy") != std::string::npos);
  const auto from_bin = run_remat("train " + kSmall + "--steps 2 --data " + d.quoted("gpl.bin"));
  const auto from_u16 =
      run_remat("train " + kSmall + "--steps 2 --data-format u16 --data " + d.quoted("gpl.u16"));
  REQUIRE(from_bin.exit_code == 0);
  REQUIRE(from_u16.exit_code == 0);
  // Same tokens, same windows, same initial weights: the same first loss.
  CHECK_FALSE(first_loss(from_text.out).empty());
  CHECK(first_loss(from_bin.out) == first_loss(from_text.out));
  CHECK(first_loss(from_u16.out) == first_loss(from_text.out));
}

TEST_CASE("a token outside the model's vocabulary is refused before any step") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("token_vocab");
  REQUIRE(run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--out " +
                    d.quoted("gpl.bin") + " /usr/share/common-licenses/GPL-3")
              .exit_code == 0);
  const std::pair<std::string, std::string> cases[] = {
      {"train --layers 1 --dim 32 --heads 2 --vocab 1000 --ctx 16 --seq 16 --batch 2 --steps 1 "
       "--data " +
           d.quoted("gpl.bin"),
       "but the model's vocabulary has 1000 ids"},
      {"train --layers 1 --dim 32 --heads 2 --vocab 1000 --ctx 16 --seq 16 --batch 2 --steps 1 " +
           remat::test::gpt2_tokenizer_flag() + "--data /usr/share/common-licenses/GPL-3",
       "the tokenizer has 50257 ids but the model's vocabulary is 1000"},
      {"train " + kSmall + "--steps 1 --data-format text --data " + d.quoted("gpl.bin"),
       "--data-format text needs --tokenizer"},
      {"train " + kSmall + "--steps 1 --data-format xml --data " + d.quoted("gpl.bin"),
       "--data-format must be auto"},
  };
  for (const auto& [args, fragment] : cases) {
    const auto r = run_remat(args);
    INFO("remat " << args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(r.out.empty());  // refused before the device and plan are printed
  }
  d.write("odd.u16", "abc");
  const auto odd =
      run_remat("train " + kSmall + "--steps 1 --data-format u16 --data " + d.quoted("odd.u16"));
  CHECK(odd.exit_code == 2);
  CHECK(odd.err.find("is not a whole number of uint16 tokens") != std::string::npos);
}

TEST_CASE("remat generate continues a prompt from a trained checkpoint") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("generate");
  const auto train =
      run_remat("train " + kSmall + "--steps 3 " + remat::test::gpt2_tokenizer_flag() +
                "--data /usr/share/common-licenses/GPL-3 --save " + d.quoted("w.safetensors"));
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  const std::string gen = "generate --init " + d.quoted("w.safetensors") + " " +
                          remat::test::gpt2_tokenizer_flag() +
                          "--prompt 'The GNU General' --tokens 6 --seed 3 --top-k 20 ";
  const auto a = run_remat(gen);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.rfind("The GNU General", 0) == 0);
  CHECK(a.out.size() > std::string("The GNU General\n").size());
  CHECK(a.err.find("tokens/s") != std::string::npos);
  CHECK(run_remat(gen).out == a.out);  // deterministic for a seed
  const auto bad = run_remat("generate " + remat::test::gpt2_tokenizer_flag() + "--prompt x");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--init is required") != std::string::npos);
}
