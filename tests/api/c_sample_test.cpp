// samples/c_app/finetune.c as an app developer runs it: a checkpoint, a text, an arena cap below
// storing everything, a few steps, a saved file; and a clean failure on a missing checkpoint.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/support/run_command.h"

using remat::test::run_command;

namespace {

const std::string kSample = std::string("'") + REMAT_C_FINETUNE_SAMPLE_PATH + "'";

// A checkpoint of the small model (vocabulary 256, for bytes), saved through the C API.
void save_checkpoint(const std::string& path) {
  remat_session_params p = remat::test::small_params();
  p.vocab = 256;
  remat_device* d = nullptr;
  remat_session* s = nullptr;
  REQUIRE(remat_device_open(nullptr, &d) == REMAT_OK);
  REQUIRE(remat_session_create(d, &p, &s) == REMAT_OK);
  REQUIRE(remat_session_save_file(s, path.c_str()) == REMAT_OK);
  remat_session_free(s);
  remat_device_free(d);
}

}  // namespace

TEST_CASE("the C sample fine-tunes under an arena cap and saves") {
  const auto dir = remat::test::scratch_dir("c_sample");
  const std::string weights = (dir / "start.safetensors").string(),
                    data = (dir / "data.txt").string(), out = (dir / "out.safetensors").string();
  save_checkpoint(weights);
  {
    std::ofstream f(data, std::ios::binary);
    for (int i = 0; i < 200; ++i) f << "the planner keeps block inputs. ";
  }
  // The cap: every:1's arena for the sample's batch 4 x seq 16, below storing everything.
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  REQUIRE(remat_session_params_from_file(&p, weights.c_str()) == REMAT_OK);
  p.batch = 4;
  p.seq = 16;
  p.policy = "every:1";
  remat_plan_report every{}, none{};
  every.struct_size = none.struct_size = sizeof(remat_plan_report);
  REQUIRE(remat_plan(&p, &every) == REMAT_OK);
  p.policy = "none";
  REQUIRE(remat_plan(&p, &none) == REMAT_OK);
  REQUIRE(every.arena_bytes < none.arena_bytes);

  const auto r = run_command(kSample + " '" + weights + "' '" + data + "' " +
                             std::to_string(every.arena_bytes) + " 6 '" + out + "'");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<double> losses;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    int step = 0;
    double loss = 0;
    if (std::sscanf(line.c_str(), "step %d loss %lf", &step, &loss) == 2) losses.push_back(loss);
  }
  REQUIRE(losses.size() == 6);
  CHECK(losses.back() < losses.front());
  CHECK(r.out.find("plan: policy auto") != std::string::npos);
  CHECK(std::filesystem::file_size(out) == std::filesystem::file_size(weights));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the C sample explains its usage and names a missing checkpoint") {
  const auto usage = run_command(kSample);
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.find("usage:") != std::string::npos);
  const auto missing =
      run_command(kSample + " /nonexistent.safetensors /nonexistent.txt 100000 1 /tmp/never");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("/nonexistent.safetensors: cannot open") != std::string::npos);
  CHECK(missing.err.find("REMAT_ERROR_IO") != std::string::npos);
  CHECK(!std::filesystem::exists("/tmp/never"));
}
