// `remat bench` and `remat profile` as a user runs them, on a very small GPT and one step per
// point: the frontier files have the documented columns and one row per point, the measured cost
// table loads in `remat plan --costs`, and bad flags follow the error contract. Benchmarks report
// figures; nothing here asserts a timing.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"

using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

// A model small enough that a step takes milliseconds even on a software Vulkan driver.
const std::string kSmall = "tiny --layers 2 --dim 32 --heads 2 --batch 1 --seq 16";

class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("remat_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string quoted(const std::string& name = "") const {
    std::string q = "'";
    q += (name.empty() ? path_ : path_ / name).string();
    q += '\'';
    return q;
  }

 private:
  fs::path path_;
};

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream f(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void require_usage_error(const std::string& args, const std::string& mentions) {
  INFO("remat " << args);
  auto r = run_remat(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: ", 0) == 0);
  CHECK(r.err.find(mentions) != std::string::npos);
}

}  // namespace

TEST_CASE("remat bench writes frontier.csv and frontier.json for one point") {
  TempDir dir("bench_point");
  auto r = run_remat("bench " + kSmall + " --policy every:1 --steps 1 --warmup 0 --out " +
                     dir.quoted("out"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto csv = lines(dir.path() / "out" / "frontier.csv");
  REQUIRE(csv.size() == 3);  // header, every:1, and none (the reference for the ratios)
  for (const char* col :
       {"label", "policy", "budget_bytes", "arena_bytes", "arena_lower_bound_bytes",
        "device_bytes_allocated", "median_step_ms", "tokens_per_s", "host_ms", "host_fraction",
        "measured_ratio", "predicted_ratio", "textbook_M_a_bytes", "textbook_M_c_bytes",
        "textbook_T_c_ratio"})
    CHECK(csv[0].find(col) != std::string::npos);
  CHECK(csv[1].rfind("every:1,every:1,", 0) == 0);
  CHECK(csv[2].rfind("none,none,", 0) == 0);
  const std::string json = slurp(dir.path() / "out" / "frontier.json");
  for (const char* key : {"\"points\":[", "\"median_step_ms\":", "\"predicted_ratio\":",
                          "\"device_bytes_allocated\":", "\"textbook\":{", "\"host_fraction\":"})
    CHECK(json.find(key) != std::string::npos);
  // Atomic writes leave no temporary files behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "out")) ++files, (void)e;
  CHECK(files == 2);
  CHECK(r.out.find("ms/step") != std::string::npos);
}

TEST_CASE("remat bench --kernels sums every dispatch of the step into one row per shader") {
  TempDir dir("bench_kernels");
  auto r = run_remat("bench --kernels " + kSmall + " --steps 3 --warmup 0 --out " + dir.quoted());
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out.substr(r.out.find("per shader")));
  std::string line;
  std::getline(in, line);  // the title
  std::getline(in, line);  // the column names
  int rows = 0, dispatches = 0, all = -1;
  while (std::getline(in, line) && !line.empty()) {
    std::istringstream f(line);
    std::string shader;
    int n = 0;
    f >> shader >> n;
    if (shader == "all") {
      all = n;
      break;
    }
    double ms = 0, fastest = 0;
    f >> ms >> fastest;
    INFO(line);
    CHECK(fastest > 0);
    CHECK(fastest <= ms);  // each dispatch's fastest step, summed, is no slower than any step
    dispatches += n, ++rows;
  }
  CHECK(rows > 5);
  CHECK(all == dispatches);
  CHECK(r.out.find("recorded " + std::to_string(all) + " dispatches") != std::string::npos);
}

TEST_CASE("remat bench measures LoRA with the loss in chunks, as planned") {
  TempDir dir("bench_lora_chunk");
  // 2 x 48 = 96 rows: a chunk of 64 and one of 32.
  auto r = run_remat(
      "bench tiny --layers 2 --dim 32 --heads 2 --batch 2 --seq 48 --lora 2 --loss-chunk 64 "
      "--policy every:1 --steps 1 --warmup 0 --out " +
      dir.quoted());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("loss in chunks of 64 rows; LoRA r 2") != std::string::npos);
  const std::string json = slurp(dir.path() / "frontier.json");
  CHECK(json.find("\"loss_chunk\":64") != std::string::npos);
  CHECK(json.find("\"lora_rank\":2") != std::string::npos);
  CHECK(json.find("\"error\"") == std::string::npos);
}

TEST_CASE("remat bench reports the loss chunk each --memory point chose") {
  TempDir dir("bench_memory_chunk");
  // Whole logits need 9.2 MiB in all; 4 MiB plans only with the loss in chunks of 64 rows.
  auto r = run_remat(
      "bench tiny --layers 2 --dim 32 --heads 2 --vocab 8192 --batch 2 --seq 64 --lora 2 "
      "--memory 4MiB --steps 1 --warmup 0 --out " +
      dir.quoted());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string json = slurp(dir.path() / "frontier.json");
  INFO(json);
  CHECK(json.find("\"device_bytes_allocated\"") != std::string::npos);
  CHECK(json.find("\"loss_chunk\":64,\"median_step_ms\"") != std::string::npos);
}

TEST_CASE("remat bench --sweep covers the named policies and auto budgets down to the minimum") {
  TempDir dir("bench_sweep");
  auto r = run_remat("bench " + kSmall + " --sweep --no-plot --steps 1 --warmup 0 --out " +
                     dir.quoted());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto csv = lines(dir.path() / "frontier.csv");
  REQUIRE(csv.size() >= 7);
  std::vector<std::string> labels;
  for (std::size_t i = 1; i < csv.size(); ++i) labels.push_back(csv[i].substr(0, csv[i].find(',')));
  for (const char* p : {"none", "every:1", "every:2", "sqrt", "selective"})
    CHECK(std::find(labels.begin(), labels.end(), p) != labels.end());
  int autos = 0;
  for (const auto& l : labels) autos += l.rfind("auto@", 0) == 0;
  CHECK(autos >= 2);
  // The last auto point runs at the minimum arena: it was planned and measured, not an error.
  CHECK(csv.back().rfind("auto@", 0) == 0);
  CHECK(csv.back().back() == ',');  // empty error column
}

TEST_CASE("remat profile writes a cost table that remat plan --costs accepts") {
  TempDir dir("profile");
  auto r = run_remat("profile " + kSmall + " --steps 1 --warmup 0 --out " + dir.quoted("c.json"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string json = slurp(dir.path() / "c.json");
  for (const char* key : {"\"default\":{", "\"kernels\":{", "\"matmul\":{",
                          "\"flops_per_s\":", "\"bytes_per_s\":", "\"launch_s\":"})
    CHECK(json.find(key) != std::string::npos);
  auto plan = run_remat("plan " + kSmall + " --policy sqrt --costs " + dir.quoted("c.json"));
  INFO(plan.out << plan.err);
  CHECK(plan.exit_code == 0);
  auto none = run_remat("plan " + kSmall + " --costs " + dir.quoted("c.json") + " --json");
  INFO(none.err);
  CHECK(none.exit_code == 0);
}

TEST_CASE("remat bench and profile reject bad flags with exit status 2") {
  TempDir dir("bench_errors");
  std::ofstream(dir.path() / "file") << "x";
  require_usage_error("bench --steps 0", "--steps");
  require_usage_error("bench --bogus", "--bogus");
  require_usage_error("bench --sweep --policy sqrt", "--sweep");
  require_usage_error("bench --sweep --kernels", "--kernels");
  require_usage_error("bench --repeats 3", "--repeats");
  require_usage_error("bench --out " + dir.quoted("file"), "not a folder");
  require_usage_error("bench --model nosuch", "nosuch");
  require_usage_error("profile " + kSmall, "--out");
  require_usage_error("profile " + kSmall + " --out " + dir.quoted(), "directory");
  require_usage_error("profile " + kSmall + " --out " + dir.quoted("missing/c.json"),
                      "no such folder");
}
