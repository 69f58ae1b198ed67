// Saves never lose data: a save interrupted half-way (REMAT_TEST_CRASH_IN_SAVE, a test-only hook
// in write_safetensors) leaves the previous file byte-identical, and the next save removes the
// dead process's temporary. Training that diverges stops at the step, and the last periodic save
// on disk is the good one.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "tests/support/run_command.h"

using remat::test::run_command;
using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string quote(const fs::path& p) {
  std::string q = "'";
  q += p.string();
  return q + "'";
}

class Folder {
 public:
  explicit Folder(const std::string& tag)
      : dir_(fs::temp_directory_path() / ("remat_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string text;
    while (text.size() < 4096) text += "a save that is interrupted must not lose the old weights. ";
    std::ofstream(dir_ / "data.txt", std::ios::binary) << text;
  }
  ~Folder() { fs::remove_all(dir_); }
  fs::path operator/(const std::string& name) const { return dir_ / name; }
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }

 private:
  fs::path dir_;
};

// A one-layer model that trains in milliseconds on lavapipe.
std::string small_run(const Folder& d) {
  return "train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --quiet --data " +
         quote(d / "data.txt") + " ";
}

}  // namespace

TEST_CASE("a save killed half-way leaves the previous weights intact") {
  Folder d("save_crash");
  const fs::path w = d / "w.safetensors";
  auto first = run_remat(small_run(d) + "--steps 2 --save " + quote(w));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const std::string before = slurp(w);
  REQUIRE(before.size() > 1000);

  // Same model, different weights; the process ends with status 99 mid-way through the write.
  auto crashed = run_command("REMAT_TEST_CRASH_IN_SAVE=1 " + std::string("'") + REMAT_CLI_PATH +
                             "' " + small_run(d) + "--steps 3 --seed 7 --save " + quote(w));
  INFO(crashed.err);
  CHECK(crashed.exit_code == 99);
  CHECK(slurp(w) == before);
  // The dead process's half-written temporary is still there, half the size of a full save.
  std::string temporary;
  for (const auto& n : d.names())
    if (n.rfind("w.safetensors.tmp-", 0) == 0) temporary = n;
  REQUIRE_FALSE(temporary.empty());
  CHECK(fs::file_size(d / temporary) == before.size() / 2);

  // The intact file still loads as a checkpoint.
  auto load = run_remat(small_run(d) + "--steps 1 --init " + quote(w));
  INFO(load.err);
  CHECK(load.exit_code == 0);

  // The next successful save of the same file removes the stale temporary.
  auto again = run_remat(small_run(d) + "--steps 1 --save " + quote(w));
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(d.names() == std::set<std::string>{"data.txt", "w.safetensors"});
  CHECK(slurp(w) != before);
  CHECK(slurp(w).size() == before.size());
}

TEST_CASE("a diverging run stops at the step and keeps the last good periodic save") {
  Folder d("diverge");
  const fs::path w = d / "w.safetensors";
  const fs::path log = d / "log.json";
  // With a learning rate of 1e10 the first update is finite, the second step's loss is not.
  auto r = run_remat(small_run(d) + "--steps 6 --lr 1e10 --save-every 1 --save " + quote(w) +
                     " --log-json " + quote(log));
  INFO(r.err);
  CHECK(r.exit_code == 1);  // not bad input: the run itself failed
  CHECK(r.err ==
        "remat: error: the loss is not finite at step 2 (try a smaller --lr or "
        "--grad-clip 1); weights from step 1 are in " +
            w.string() + "\n");
  // The periodic save of step 1 is on disk, no log (the run did not finish), no temporaries.
  CHECK(d.names() == std::set<std::string>{"data.txt", "w.safetensors"});

  // It is exactly what a run that stops after step 1 saves (kernels are deterministic). Those
  // weights are finite (saves refuse anything else) but too large to train on: the next step's
  // loss overflows whether it starts from the file or from memory.
  const fs::path ref = d / "ref.safetensors";
  auto one = run_remat(small_run(d) + "--steps 1 --lr 1e10 --save " + quote(ref));
  INFO(one.err);
  REQUIRE(one.exit_code == 0);
  CHECK(slurp(w) == slurp(ref));
  auto resumed = run_remat(small_run(d) + "--steps 1 --init " + quote(w));
  INFO(resumed.err);
  CHECK(resumed.exit_code == 1);
  CHECK(resumed.err.find("the loss is not finite at step 1") != std::string::npos);
}

TEST_CASE("a periodic save of non-finite weights is refused and the previous file kept") {
  Folder d("nonfinite_save");
  const fs::path w = d / "w.safetensors";
  auto good = run_remat(small_run(d) + "--steps 1 --save " + quote(w));
  REQUIRE(good.exit_code == 0);
  const std::string before = slurp(w);
  // 1e38 times an Adam step of order one overflows float: the weights after step 1 are infinite.
  auto r = run_remat(small_run(d) + "--steps 3 --lr 1e38 --save-every 1 --save " + quote(w));
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind("remat: error: saving step 1: " + w.string() + ": tensor '", 0) == 0);
  CHECK(r.err.find("has a non-finite value") != std::string::npos);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK(slurp(w) == before);
  CHECK(d.names() == std::set<std::string>{"data.txt", "w.safetensors"});
}
