// `remat train --save-state / --resume` as a user runs it: a run stopped (by --stop-at, SIGTERM or
// SIGINT) and resumed ends with weights and per-step losses byte-identical to a run never
// stopped, with dropout, accumulation, a warmup-cosine schedule and clipping on; flags that would
// change the run and damaged states are refused with one line; a save killed half-way leaves the
// previous state.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  return "'" + p.string() + "'";
}

class Folder {
 public:
  explicit Folder(const std::string& tag)
      : dir_(fs::temp_directory_path() / ("remat_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string text;
    while (text.size() < 6000) text += "a run that is stopped continues where it left off. ";
    std::ofstream(dir_ / "data.txt", std::ios::binary) << text;
  }
  ~Folder() { fs::remove_all(dir_); }
  fs::path operator/(const std::string& name) const { return dir_ / name; }

 private:
  fs::path dir_;
};

// Dropout, two micro-batches, warmup then cosine decay, clipping: everything that a resumed run
// must pick up exactly where it stopped.
std::string run_flags(const Folder& d) {
  return "train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --dropout 0.1 "
         "--accum 2 --lr 3e-3 --lr-schedule cosine --warmup-steps 3 --min-lr-ratio 0.1 "
         "--grad-clip 0.5 --seed 5 --data " +
         quote(d / "data.txt") + " ";
}

// Each step's "loss", "lr" and "grad_norm" from a --log-json file, keyed by step.
std::vector<std::string> step_lines(const fs::path& log) {
  std::vector<std::string> out;
  std::istringstream lines(slurp(log));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"step\":") == std::string::npos) continue;
    const auto ms = line.find(",\"ms\":");
    const auto norm = line.find(",\"grad_norm\":");
    const auto after = line.find(',', norm + 1);
    out.push_back(line.substr(0, ms) + line.substr(norm, after - norm));
  }
  return out;
}

// Starts `remat <args>` with stdout and stderr going to files; returns its pid.
pid_t spawn_remat(const std::string& args, const fs::path& out, const fs::path& err) {
  const std::string command =
      "exec '" + std::string(REMAT_CLI_PATH) + "' " + args + " >" + quote(out) + " 2>" + quote(err);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits until `file` contains `text` (or the process ended); true when it does.
bool wait_for(const fs::path& file, const std::string& text, pid_t pid) {
  for (int i = 0; i < 60000; ++i) {
    if (slurp(file).find(text) != std::string::npos) return true;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

int exit_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("a run stopped with --stop-at and resumed ends byte-identical to one never stopped") {
  Folder d("resume_stop_at");
  auto full = run_remat(run_flags(d) + "--quiet --steps 10 --save " +
                        quote(d / "full.safetensors") + " --log-json " + quote(d / "full.json"));
  INFO(full.err);
  REQUIRE(full.exit_code == 0);

  auto first = run_remat(run_flags(d) + "--steps 10 --stop-at 4 --save-state " +
                         quote(d / "state") + " --log-json " + quote(d / "first.json"));
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err == "remat: stopped at step 4 of 10 (--stop-at); state saved in " +
                         (d / "state").string() + "\n");
  CHECK(first.out.find("state    step 4 saved in ") != std::string::npos);

  // No flag but --resume: the state names the model, data, shapes and schedule.
  auto rest = run_remat("train --quiet --resume " + quote(d / "state") + " --save " +
                        quote(d / "resumed.safetensors") + " --log-json " + quote(d / "rest.json"));
  INFO(rest.out << rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(slurp(d / "resumed.safetensors") == slurp(d / "full.safetensors"));
  std::vector<std::string> both = step_lines(d / "first.json");
  const auto later = step_lines(d / "rest.json");
  both.insert(both.end(), later.begin(), later.end());
  CHECK(both.size() == 10);
  CHECK(both == step_lines(d / "full.json"));

  // --steps may be raised; the state of a longer run continues from step 10 of 12.
  auto longer = run_remat("train --quiet --resume " + quote(d / "state") +
                          " --steps 12 --save-state " + quote(d / "state2"));
  INFO(longer.err);
  CHECK(longer.exit_code == 0);
  CHECK(slurp(d / "state2" / "state.json").find("\"step\": 12") != std::string::npos);
}

TEST_CASE("a LoRA run resumed with --resume alone ends with byte-identical adapters") {
  Folder d("resume_lora");
  const std::string lora = "--lora 2 --lora-alpha 3 --lora-targets c_attn,mlp.c_fc ";
  auto full = run_remat(run_flags(d) + lora + "--quiet --steps 8 --save-adapter " +
                        quote(d / "full") + " --log-json " + quote(d / "full.json"));
  INFO(full.err);
  REQUIRE(full.exit_code == 0);
  auto first = run_remat(run_flags(d) + lora + "--quiet --steps 8 --stop-at 3 --save-state " +
                         quote(d / "state") + " --log-json " + quote(d / "first.json"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(slurp(d / "state" / "state.json").find("\"lora_targets\": \"c_attn,mlp.c_fc\"") !=
        std::string::npos);

  auto rest = run_remat("train --quiet --resume " + quote(d / "state") + " --save-adapter " +
                        quote(d / "resumed") + " --log-json " + quote(d / "rest.json"));
  INFO(rest.out << rest.err);
  REQUIRE(rest.exit_code == 0);
  const std::string adapter = slurp(d / "full" / "adapter_model.safetensors");
  REQUIRE(adapter.size() > 100);
  CHECK(slurp(d / "resumed" / "adapter_model.safetensors") == adapter);
  std::vector<std::string> both = step_lines(d / "first.json");
  const auto later = step_lines(d / "rest.json");
  both.insert(both.end(), later.begin(), later.end());
  CHECK(both == step_lines(d / "full.json"));

  // Another rank is another run.
  auto other = run_remat("train --quiet --resume " + quote(d / "state") + " --lora 4");
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("--lora 4 differs from the state's 2") != std::string::npos);
}

// Runs `flags` for 5 steps unstopped, and stopped after 2 into a state that must contain
// `state_text`; resumes it with --resume alone and checks the adapters are the unstopped run's.
// Returns the resumed run's output.
static std::string resumed_lora_run(const Folder& d, const std::string& flags,
                                    const std::string& state_text) {
  auto full =
      run_remat(run_flags(d) + flags + "--quiet --steps 5 --save-adapter " + quote(d / "full"));
  INFO(full.err);
  REQUIRE(full.exit_code == 0);
  auto first = run_remat(run_flags(d) + flags + "--quiet --steps 5 --stop-at 2 --save-state " +
                         quote(d / "state"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(slurp(d / "state" / "state.json").find(state_text) != std::string::npos);
  auto rest =
      run_remat("train --resume " + quote(d / "state") + " --save-adapter " + quote(d / "resumed"));
  INFO(rest.out << rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(slurp(d / "resumed" / "adapter_model.safetensors") ==
        slurp(d / "full" / "adapter_model.safetensors"));
  return rest.out;
}

TEST_CASE("a run under --memory resumes under the same cap with --resume alone") {
  Folder d("resume_memory");
  const std::string out = resumed_lora_run(d, "--lora 2 --memory 3MiB ", "\"memory\": \"3145728\"");
  CHECK(out.find("memory cap 3.00 MiB") != std::string::npos);
}

TEST_CASE("a LoRA run on a bf16 base resumes on it and refuses another --weights-dtype") {
  Folder d("resume_weights16");
  resumed_lora_run(d, "--lora 2 --weights-dtype bf16 ", "\"weights_dtype\": \"bf16\"");
  for (const char* other : {"f32", "f16"}) {
    auto r =
        run_remat("train --quiet --resume " + quote(d / "state") + " --weights-dtype " + other);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(std::string("--weights-dtype ") + other + " differs from the state's bf16") !=
          std::string::npos);
  }
}

TEST_CASE("flags that would change a resumed run, and damaged states, are refused") {
  Folder d("resume_refusals");
  auto first =
      run_remat(run_flags(d) + "--quiet --steps 6 --stop-at 2 --save-state " + quote(d / "state"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const std::string resume = "train --quiet --resume " + quote(d / "state") + " ";
  auto refused = [&](const std::string& flags, const std::string& why) {
    auto r = run_remat(resume + flags);
    INFO(flags << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);
    CHECK(r.err.find(why) != std::string::npos);
  };
  refused("--batch 3", "--batch 3 differs from the state's 2");
  refused("--seq 8", "--seq 8 differs from the state's 16");
  refused("--dim 64", "the model gpt2 L1 C64 H2 V256 ctx16 differs from the state's gpt2 L1 C32");
  refused("--model tiny", "the model gpt2 L4 C128");
  refused("--accum 1", "--accum 1 differs from the state's 2");
  refused("--lr-schedule linear", "--lr-schedule linear differs from the state's cosine");
  refused("--steps 2", "the state is at step 2 and --steps is 2");
  REQUIRE(run_remat(run_flags(d) + "--quiet --steps 3 --save " + quote(d / "w.safetensors"))
              .exit_code == 0);
  refused("--init " + quote(d / "w.safetensors"), "the state's run had no --init");
  std::ofstream(d / "other.txt") << std::string(5000, 'x');
  refused("--data " + quote(d / "other.txt"), "is not the file the run read");
  // The same flags as the state's are fine, as are another arena or policy (same results).
  auto same = run_remat(resume + "--batch 2 --seq 16 --policy every:1 --steps 3");
  INFO(same.err);
  CHECK(same.exit_code == 0);

  // A damaged state: one line naming the file, never a crash.
  fs::copy(d / "state", d / "bad");
  const std::string bad = "train --quiet --resume " + quote(d / "bad") + " ";
  std::ofstream(d / "bad" / "state.json", std::ios::trunc) << "{\"format\": 1, \"step\": ";
  auto r = run_remat(bad);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad/state.json: ") != std::string::npos);
  fs::remove(d / "bad" / "state.json");
  r = run_remat(bad);
  CHECK(r.err.find("bad/state.json: missing") != std::string::npos);
  fs::copy_file(d / "state" / "state.json", d / "bad" / "state.json");
  fs::resize_file(d / "bad" / "params.safetensors",
                  fs::file_size(d / "bad" / "params.safetensors") - 1);
  r = run_remat(bad);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad/params.safetensors: ") != std::string::npos);
  CHECK(
      run_remat("train --resume " + quote(d / "nowhere")).err.find("nowhere: no training state") !=
      std::string::npos);
  // Moved data is found by its contents under a new path; a missing file names the fix.
  fs::rename(d / "data.txt", d / "moved.txt");
  r = run_remat(resume);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("give its new path with --data") != std::string::npos);
  r = run_remat(resume + "--steps 3 --data " + quote(d / "moved.txt"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  fs::rename(d / "moved.txt", d / "data.txt");
  // Changed data under the state's path is named too.
  std::ofstream(d / "data.txt", std::ios::app) << "more";
  r = run_remat(resume);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is not the file the run read") != std::string::npos);
}

TEST_CASE("a run started from --init records the weights and loads them again on resume") {
  Folder d("resume_init");
  const fs::path w = d / "w.safetensors";
  REQUIRE(run_remat(run_flags(d) + "--quiet --steps 3 --save " + quote(w)).exit_code == 0);
  const std::string from = run_flags(d) + "--quiet --steps 6 --init " + quote(w) + " ";
  REQUIRE(run_remat(from + "--save " + quote(d / "full.safetensors")).exit_code == 0);
  auto first = run_remat(from + "--stop-at 3 --save-state " + quote(d / "state"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(slurp(d / "state" / "state.json").find("\"init\": {") != std::string::npos);

  // Moved: named, and found again under its new path by its contents.
  fs::rename(w, d / "moved.safetensors");
  auto missing = run_remat("train --quiet --resume " + quote(d / "state"));
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("w.safetensors") != std::string::npos);
  auto rest =
      run_remat("train --quiet --resume " + quote(d / "state") + " --init " +
                quote(d / "moved.safetensors") + " --save " + quote(d / "resumed.safetensors"));
  INFO(rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(slurp(d / "resumed.safetensors") == slurp(d / "full.safetensors"));
}

TEST_CASE("SIGTERM stops at a step boundary, saves the state, and the resumed run is identical") {
  Folder d("resume_sigterm");
  const std::string steps = "--steps 300 ";
  auto full =
      run_remat(run_flags(d) + "--quiet " + steps + "--save " + quote(d / "full.safetensors"));
  INFO(full.err);
  REQUIRE(full.exit_code == 0);

  const pid_t pid = spawn_remat(run_flags(d) + steps + "--save-state " + quote(d / "state"),
                                d / "out.txt", d / "err.txt");
  REQUIRE(pid > 0);
  REQUIRE(wait_for(d / "out.txt", "step 1/300", pid));
  ::kill(pid, SIGTERM);
  CHECK(exit_status(pid) == 143);
  const std::string err = slurp(d / "err.txt");
  INFO(err);
  int stopped = 0;
  REQUIRE(std::sscanf(err.c_str(), "remat: stopped at step %d of 300; state saved in", &stopped) ==
          1);
  CHECK(stopped >= 1);
  CHECK(stopped < 300);
  CHECK(slurp(d / "state" / "state.json").find("\"step\": " + std::to_string(stopped) + ",") !=
        std::string::npos);

  auto rest = run_remat("train --quiet --resume " + quote(d / "state") + " --save " +
                        quote(d / "resumed.safetensors"));
  INFO(rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(slurp(d / "resumed.safetensors") == slurp(d / "full.safetensors"));
}

TEST_CASE("a second SIGINT exits at once and the last complete state still resumes") {
  Folder d("resume_sigint");
  const pid_t pid =
      spawn_remat(run_flags(d) + "--steps 400 --save-every 1 --save-state " + quote(d / "state"),
                  d / "out.txt", d / "err.txt");
  REQUIRE(pid > 0);
  REQUIRE(wait_for(d / "out.txt", "state    step 2 saved", pid));
  ::kill(pid, SIGINT);
  ::kill(pid, SIGINT);
  CHECK(exit_status(pid) == 130);
  auto rest = run_remat("train --quiet --resume " + quote(d / "state") + " --steps 401");
  INFO(rest.err);
  CHECK(rest.exit_code == 0);
}

TEST_CASE("a state save killed half-way leaves the previous state, which still resumes") {
  Folder d("resume_crash");
  auto first =
      run_remat(run_flags(d) + "--quiet --steps 6 --stop-at 2 --save-state " + quote(d / "state"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  std::set<std::string> files;
  std::vector<std::string> before;
  for (const char* f : {"state.json", "params.safetensors", "optimizer.safetensors"})
    before.push_back(slurp(d / "state" / f));

  auto crashed = run_command("REMAT_TEST_CRASH_IN_SAVE=1 '" + std::string(REMAT_CLI_PATH) + "' " +
                             "train --quiet --resume " + quote(d / "state") + " --save-state " +
                             quote(d / "state"));
  CHECK(crashed.exit_code == 99);
  std::vector<std::string> after;
  for (const char* f : {"state.json", "params.safetensors", "optimizer.safetensors"})
    after.push_back(slurp(d / "state" / f));
  CHECK(after == before);
  // The dead process's half-written folder sits beside it until the next save removes it.
  bool temporary = false;
  for (const auto& e : fs::directory_iterator(d / "."))
    temporary |= e.path().filename().string().rfind("state.tmp-", 0) == 0;
  CHECK(temporary);

  auto rest = run_remat("train --quiet --resume " + quote(d / "state") + " --save-state " +
                        quote(d / "state"));
  INFO(rest.err);
  CHECK(rest.exit_code == 0);
  for (const auto& e : fs::directory_iterator(d / "."))
    CHECK(e.path().filename().string().rfind("state.tmp-", 0) != 0);
  CHECK(slurp(d / "state" / "state.json").find("\"step\": 6,") != std::string::npos);
}
