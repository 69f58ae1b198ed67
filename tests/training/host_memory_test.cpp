// Host memory of load + train + save stays near what the device holds: weights stream through a
// bounded staging buffer, so the host peak must not grow with the checkpoint (a copy of the file,
// or a host image of parameters, gradients and moments, would break the bound below).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "formats/gpt2_weights.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
uint64_t status_bytes(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string key;
  uint64_t kib = 0;
  while (f >> key) {
    if (key == field + ":" && f >> kib) return kib * 1024;
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

// A checkpoint for `session`'s model written without a host copy of it: piece by piece.
void write_checkpoint(const Session& session, const fs::path& path) {
  std::vector<TensorSpec> specs;
  for (TensorId id : session.plan().parameters) {
    const Tensor& t = session.plan().tensors.at(static_cast<std::size_t>(id)).tensor;
    specs.push_back({t.name, t.shape});
  }
  SafetensorsWriter w(path, specs, {{"n_head", std::to_string(session.config().model.heads)}});
  std::vector<float> piece(1 << 16);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    uint64_t n = 1;
    for (int64_t d : specs[i].shape) n *= static_cast<uint64_t>(d);
    for (uint64_t first = 0; first < n; first += piece.size()) {
      const auto count = static_cast<std::size_t>(std::min<uint64_t>(piece.size(), n - first));
      gpt2_initial_values(specs[i], session.config().model, 3, i, first,
                          std::span(piece).first(count));
      w.write(std::span(piece).first(count));
    }
  }
  w.commit();
}

// One measured run: the peak host memory of writing a checkpoint, loading it, one step and a save,
// above the resident memory before it (the peak is reset first), less the device memory the run
// allocated (on lavapipe device memory is host memory).
struct HostRun {
  uint64_t file = 0, device = 0, rss_before = 0, peak = 0;
  int64_t overhead() const { return int64_t(peak - rss_before) - int64_t(device); }
};

HostRun measured_run(const SessionConfig& c, const fs::path& dir) {
  {
    std::ofstream reset("/proc/self/clear_refs");
    reset << "5" << std::flush;
    REQUIRE(reset.good());
  }
  HostRun r;
  r.rss_before = status_bytes("VmRSS");
  REQUIRE(status_bytes("VmHWM") < r.rss_before + (8u << 20));  // the peak was reset
  const uint64_t device_before = test::device().ledger().stats().total_live_bytes;
  {
    Session s(test::device(), c);
    write_checkpoint(s, dir / "w.safetensors");
    s.load(dir / "w.safetensors");
    const std::size_t n = 16;
    s.step(test::random_indices(n, 1, 50257), test::random_indices(n, 2, 50257));
    s.save(dir / "out.safetensors");
  }
  r.file = fs::file_size(dir / "w.safetensors");
  r.device = test::device().ledger().stats().peak_total_bytes - device_before;
  r.peak = status_bytes("VmHWM");
  return r;
}

}  // namespace

TEST_CASE("load, a training step and save need little host memory beyond the device's") {
  const fs::path dir = fs::temp_directory_path() / ("remat_hostmem_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SessionConfig c;
  c.model = ModelConfig{1, 256, 4, 50257, 16};  // a GPT-2 vocabulary: a 52 MB checkpoint
  c.shape.batch = 1;
  c.shape.seq = 16;
  c.policy = Policy::parse("none");
  // Kernel compilation (LLVM on lavapipe) is not what this test bounds, and its memory depends
  // on the driver's own shader cache being warm: a first session compiles into a fresh pipeline
  // cache, then each measured session loads from it.
  c.pipeline_cache_dir = dir / "pipelines";
  { Session warm(test::device(), c); }
  // What is bounded is what every run needs: the least of three runs. A single run on a machine
  // busy with other jobs once grew 39 MB instead of 3-5 (memory the driver's threads take once,
  // at a moment that depends on scheduling); such a one-off is not what the bound is about, while
  // a copy of the file would be in every run.
  std::vector<HostRun> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(measured_run(c, dir));
  fs::remove_all(dir);
  const HostRun& least = *std::min_element(
      runs.begin(), runs.end(),
      [](const HostRun& a, const HostRun& b) { return a.overhead() < b.overhead(); });
  std::string figures;
  for (const HostRun& r : runs) {
    REQUIRE(r.rss_before > 0);
    REQUIRE(r.peak > r.rss_before);
    REQUIRE(r.file > 50'000'000);
    figures += "file " + std::to_string(r.file / 1000000) + " MB, device " +
               std::to_string(r.device / 1000000) + " MB, host peak growth " +
               std::to_string((r.peak - r.rss_before) / 1000000) + " MB, overhead " +
               std::to_string(r.overhead() / 1000000) + " MB\n";
  }
  INFO(figures);
  // Measured: 3-4 MB. One more copy of the file (55 MB) would cross this bound in every run, and a
  // host image of the persistent buffer (parameters, gradients, moments: 4x the file) would cross
  // it far.
  CHECK(least.overhead() < int64_t(32u << 20));
}

TEST_CASE("a QLoRA base streams from its GGUF file: little host memory beyond the device's") {
  const fs::path dir =
      fs::temp_directory_path() / ("remat_hostmem_gguf_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SessionConfig c;
  c.model = test::block_llama_model(100000, 16, true);  // a 28 MB q8_0 file, mostly token_embd
  c.model.dim = 256;
  c.model.ffn = 512;
  c.shape.batch = 1;
  c.shape.seq = 16;
  c.policy = Policy::parse("none");
  c.pipeline_cache_dir = dir / "pipelines";
  {
    SessionConfig full = c;
    const Session source(test::device(), full);
    std::vector<test::GgufParam> params;
    for (TensorId id : source.plan().parameters) {
      const Tensor& t = source.plan().tensors.at(std::size_t(id)).tensor;
      params.push_back({t.name, t.shape, source.values(id)});
    }
    test::write_gguf_model(dir / "q8.gguf", params, c.model, GgufArch::llama, GgmlType::q8_0);
  }
  c.lora.rank = 4;
  c.shape.block_weights = GgufWeights(GgufFile::open(dir / "q8.gguf")).block_weights();
  { Session warm(test::device(), c); }
  std::vector<HostRun> runs;
  for (int i = 0; i < 3; ++i) {
    {
      std::ofstream reset("/proc/self/clear_refs");
      reset << "5" << std::flush;
    }
    HostRun r;
    r.rss_before = status_bytes("VmRSS");
    const uint64_t device_before = test::device().ledger().stats().total_live_bytes;
    {
      Session s(test::device(), c);
      s.load(dir / "q8.gguf");
      s.step(test::random_indices(16, 1, 100000), test::random_indices(16, 2, 100000));
      // A session allocates everything when created; the ledger's peak also holds the larger
      // full fine-tuning session that wrote the file.
      r.device = test::device().ledger().stats().total_live_bytes - device_before;
    }
    r.file = fs::file_size(dir / "q8.gguf");
    r.peak = status_bytes("VmHWM");
    runs.push_back(r);
  }
  fs::remove_all(dir);
  const HostRun& least = *std::min_element(
      runs.begin(), runs.end(),
      [](const HostRun& a, const HostRun& b) { return a.overhead() < b.overhead(); });
  INFO("file " << least.file / 1000000 << " MB, device " << least.device / 1000000
               << " MB, overhead " << least.overhead() / 1000000 << " MB");
  REQUIRE(least.file > 27'000'000);
  // The load reads one stored row at a time (and the check pass one staging piece of floats):
  // measured -13 MB (the arena's pages are not all touched). A copy of the file (28 MB) or of
  // its decoded floats (105 MB) would cross this bound.
  CHECK(least.overhead() < int64_t(8u << 20));
}
