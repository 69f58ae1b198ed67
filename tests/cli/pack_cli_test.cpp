// `remat train --pack`: JSONL examples several to a row. The run reports rows, examples per row,
// padding and trained targets a step, one example a row and packed; every --log-json step line
// counts the targets it trained (packed or not); validation examples are packed too and give the
// validation loss of one example a row over the same targets; a packed run stopped and resumed
// reads the rows of one never stopped, its state recording where packing stands; `remat plan
// --data --pack` reports train's packing line; --pack on other data exits 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

namespace {

const std::string kShape =
    "--layers 1 --dim 32 --heads 2 --vocab 50257 --ctx 32 --seq 32 --batch 2 ";
const std::string kSmall = kShape + "--lr 1e-3 ";

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

// The summary line a run ends its log with.
remat::JsonValue summary(const std::string& log) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"summary\":") != std::string::npos) return remat::parse_json(line);
  FAIL("no summary line in the log");
  return {};
}

// The line of `out` that starts with `prefix`, or "".
std::string line_of(const std::string& out, const std::string& prefix) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
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

TEST_CASE("remat train --pack packs --val-data: the validation loss of one example a row") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("pack_val");
  d.write("ft.jsonl", examples());
  d.write("chat.jinja", kChat);
  std::string held_out;  // 13 examples unlike the training ones: 4 batches of 2 read 8 of them
  for (int i = 0; i < 13; ++i)
    held_out += "{\"prompt\": \"Name " + std::to_string(i) + " twice.\", \"completion\": \"" +
                std::string(std::size_t(1 + i % 5), 'x') + " " + std::to_string(i) + "\"}\n";
  d.write("val.jsonl", held_out);
  const std::string run = "train " + kSmall + "--steps 2 --val-batches 4 " +
                          remat::test::gpt2_tokenizer_flag() + "--chat-template " +
                          d.quoted("chat.jinja") + " --data " + d.quoted("ft.jsonl") +
                          " --val-data " + d.quoted("val.jsonl") + " ";
  const auto packed = run_remat(run + "--pack --log-json " + d.quoted("packed.json"));
  INFO(packed.out << packed.err);
  REQUIRE(packed.exit_code == 0);
  const auto plain = run_remat(run + "--log-json " + d.quoted("plain.json"));
  INFO(plain.out << plain.err);
  REQUIRE(plain.exit_code == 0);
  CHECK(packed.out.find("evaluated; packed: 8 examples in ") != std::string::npos);
  CHECK(plain.out.find("4 batches of 2 × 32 evaluated, dropout off") != std::string::npos);
  const remat::JsonValue p = summary(d.read("packed.json")), u = summary(d.read("plain.json"));
  // The same targets, in fewer batches; before the first step both models are the seed's, so the
  // mean over those targets is one number up to the order of the float sums.
  REQUIRE(p.find("val_trained_tokens"));
  CHECK(p.find("val_trained_tokens")->number == u.find("val_trained_tokens")->number);
  CHECK(u.find("val_trained_tokens")->number > 8);
  CHECK(p.find("val_batches")->number < u.find("val_batches")->number);
  const double packed_loss = p.find("initial_val_loss")->number,
               plain_loss = u.find("initial_val_loss")->number;
  std::printf("validation loss packed %.9f, one example a row %.9f\n", packed_loss, plain_loss);
  CHECK(packed_loss == Approx(plain_loss).epsilon(1e-6));
  // The step lines that evaluate say over how many targets, packed or not.
  for (const std::string& log : {d.read("packed.json"), d.read("plain.json")}) {
    const auto lines = steps(log);
    REQUIRE(lines.size() == 2);
    CHECK_FALSE(lines[0].find("val_loss"));
    REQUIRE(lines[1].find("val_loss"));
    REQUIRE(lines[1].find("val_trained_tokens"));
    CHECK(lines[1].find("val_trained_tokens")->number == u.find("val_trained_tokens")->number);
    CHECK(lines[1].find("trained_tokens")->number > 0);
  }
}

TEST_CASE("remat plan --data --pack reports the rows train reads, beside the packed plan") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("pack_plan");
  d.write("ft.jsonl", examples());
  d.write("chat.jinja", kChat);
  const std::string data = remat::test::gpt2_tokenizer_flag() + "--chat-template " +
                           d.quoted("chat.jinja") + " --data " + d.quoted("ft.jsonl") + " ";
  const auto plan = run_remat("plan " + kShape + data + "--pack");
  INFO(plan.out << plan.err);
  REQUIRE(plan.exit_code == 0);
  const auto train = run_remat("train " + kSmall + "--steps 1 " + data + "--pack");
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  const std::string rows = line_of(plan.out, "rows     ");
  CHECK(rows.find("one example a row: 20 rows, 1.00 examples/row") != std::string::npos);
  CHECK(rows.find("trained targets/step; packed (read): ") != std::string::npos);
  CHECK(rows == line_of(train.out, "rows     "));
  CHECK(line_of(plan.out, "data     ") == line_of(train.out, "data     "));
  CHECK(plan.out.find("packed rows: positions restart per example") != std::string::npos);
  // The plan is the packed graph's: its io holds the positions too.
  const auto json = run_remat("plan " + kShape + data + "--pack --json");
  REQUIRE(json.exit_code == 0);
  const remat::JsonValue j = remat::parse_json(json.out);
  CHECK(j.find("packed")->boolean);
  const remat::JsonValue* r = j.find("data")->find("rows");
  REQUIRE(r);
  CHECK(r->find("packed")->boolean);
  const remat::JsonValue *one = r->find("one_example_a_row"), *packed = r->find("packed_rows");
  CHECK(one->find("rows")->number == 20);
  CHECK(packed->find("rows")->number < 20);
  CHECK(packed->find("padding")->number < one->find("padding")->number);
  CHECK(packed->find("trained_targets_per_step")->number >
        one->find("trained_targets_per_step")->number);
  const auto unpacked = run_remat("plan " + kShape + data + "--json");
  REQUIRE(unpacked.exit_code == 0);
  const remat::JsonValue u = remat::parse_json(unpacked.out);
  CHECK_FALSE(u.find("packed")->boolean);
  CHECK(j.find("persistent")->find("io")->number > u.find("persistent")->find("io")->number);
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

TEST_CASE("remat train and plan with --pack on data that is not JSONL exit 2 with one line") {
  remat::test::TempFolder d("pack_errors");
  d.write("plain.txt", std::string(200, 'a'));
  const auto r = run_remat("train tiny --steps 1 --pack --data " + d.quoted("plain.txt"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("remat: error: --pack applies to JSONL examples") == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  const auto plan = run_remat("plan tiny --pack --data " + d.quoted("plain.txt"));
  CHECK(plan.exit_code == 2);
  CHECK(plan.err.find("remat: error: --pack applies to JSONL examples") == 0);
  CHECK(std::count(plan.err.begin(), plan.err.end(), '\n') == 1);
  const auto no_data = run_remat("plan tiny --chat-template " + d.quoted("plain.txt"));
  CHECK(no_data.exit_code == 2);
  CHECK(no_data.err.find("remat: error: --chat-template reads --data; give --data FILE") == 0);
}
