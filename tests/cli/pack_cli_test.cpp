// `remat train --pack`: JSONL examples several to a row. The run reports rows, examples per row
// and padding one example a row and packed; every --log-json step line counts the targets it
// trained (packed or not); a packed run stopped and resumed reads the rows of one never stopped,
// its state recording where packing stands; --pack on other data exits 2.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

namespace {

const std::string kSmall =
    "--layers 1 --dim 32 --heads 2 --vocab 50257 --ctx 32 --seq 32 --batch 2 --lr 1e-3 ";

constexpr const char* kChat =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

// Short examples of a few lengths: most rows of 32 positions hold several.
std::string examples() {
  std::string s;
  for (int i = 0; i < 10; ++i) {
    const std::string n = std::to_string(i);
    s += "{\"prompt\": \"What is " + n + " plus one?\", \"completion\": \"" +
         std::to_string(i + 1) + "\"}\n";
    s += "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi " + n +
         "\"}, {\"role\": \"assistant\", \"content\": \"Hello, how can I help?\"}]}\n";
  }
  return s;
}

std::vector<remat::JsonValue> steps(const std::string& log) {
  std::vector<remat::JsonValue> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"step\":") != std::string::npos) out.push_back(remat::parse_json(line));
  return out;
}

std::vector<double> losses(const std::string& log) {
  std::vector<double> out;
  for (const remat::JsonValue& s : steps(log)) out.push_back(s.find("loss")->number);
  return out;
}

}  // namespace

TEST_CASE("remat train --pack reports the rows and logs the trained targets of every step") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("pack_cli");
  d.write("ft.jsonl", examples());
  d.write("chat.jinja", kChat);
  const std::string run = "train " + kSmall + "--steps 3 " + remat::test::gpt2_tokenizer_flag() +
                          "--chat-template " + d.quoted("chat.jinja") + " --data " +
                          d.quoted("ft.jsonl") + " ";
  const auto packed = run_remat(run + "--pack --log-json " + d.quoted("packed.json"));
  INFO(packed.err);
  REQUIRE(packed.exit_code == 0);
  CHECK(packed.out.find("rows     one example a row: 20 rows, 1.00 examples/row") !=
        std::string::npos);
  CHECK(packed.out.find("packed (read): ") != std::string::npos);
  const auto plain = run_remat(run + "--log-json " + d.quoted("plain.json"));
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("one example a row (read)") != std::string::npos);
  // Packed steps train more targets than one example a row does, and say so on every line.
  const auto p = steps(d.read("packed.json")), u = steps(d.read("plain.json"));
  REQUIRE(p.size() == 3);
  REQUIRE(u.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(p[i].find("trained_tokens"));
    REQUIRE(u[i].find("trained_tokens"));
    CHECK(p[i].find("trained_tokens")->number > u[i].find("trained_tokens")->number);
    CHECK(p[i].find("trained_tokens_per_s")->number > 0);
  }
}

TEST_CASE("a packed run stopped and resumed reads the rows of one never stopped") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("pack_resume");
  d.write("ft.jsonl", examples());
  d.write("chat.jinja", kChat);
  const std::string run = "train " + kSmall + "--steps 8 --accum 2 --shuffle 5 --pack " +
                          remat::test::gpt2_tokenizer_flag() + "--chat-template " +
                          d.quoted("chat.jinja") + " --data " + d.quoted("ft.jsonl") + " ";
  REQUIRE(run_remat(run + "--log-json " + d.quoted("whole.json")).exit_code == 0);
  REQUIRE(run_remat(run + "--stop-at 5 --save-state " + d.quoted("state") + " --log-json " +
                    d.quoted("first.json"))
              .exit_code == 0);
  // The state records the packing and where it stands: 5 steps of 2 × 2 rows read.
  const std::string state = d.read("state/state.json");
  CHECK(state.find("\"packed\": true") != std::string::npos);
  CHECK(state.find("\"pack_next_row\": \"20\"") != std::string::npos);
  const auto resumed =
      run_remat("train --resume " + d.quoted("state") + " --log-json " + d.quoted("second.json"));
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  auto parts = losses(d.read("first.json"));
  for (double l : losses(d.read("second.json"))) parts.push_back(l);
  CHECK(parts == losses(d.read("whole.json")));
}

TEST_CASE("remat train with --pack on data that is not JSONL exits 2 with one line") {
  remat::test::TempFolder d("pack_errors");
  d.write("plain.txt", std::string(200, 'a'));
  const auto r = run_remat("train tiny --steps 1 --pack --data " + d.quoted("plain.txt"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("remat: error: --pack applies to JSONL examples") == 0);
}
