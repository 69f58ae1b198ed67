// Training states (runtime/training_state.h): a run saved at step k and continued in a new session
// ends bit-identical to a run never stopped, with dropout, accumulation, a warmup-cosine schedule
// and gradient clipping all on; damaged states are refused with one line and leave the session as
// it was; a save that fails half-way leaves the previous state.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "runtime/training_state.h"
#include "runtime/vulkan/staging.h"
#include "tests/runtime/tiny_training.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

SessionConfig config() {
  SessionConfig c;
  c.model = ModelConfig{2, 32, 2, 61, 16};
  c.shape.batch = 2;
  c.shape.seq = 16;
  c.shape.dropout = 0.1f;
  c.accum = 2;
  c.seed = 11;
  c.optimizer.lr = 3e-3;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 0.5f;
  c.schedule.decay = LrDecay::cosine;
  c.schedule.warmup_steps = 2;
  c.schedule.total_steps = 6;
  c.schedule.min_lr_ratio = 0.1;
  return c;
}

// Step s's batch is a pure function of s, as the CLI's data position is.
float step(Session& s, uint32_t at) {
  const auto& c = s.config();
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq * c.accum;
  return s.step(test::random_indices(n, 100 + at, 61), test::random_indices(n, 200 + at, 61));
}

std::vector<uint8_t> moments(const Session& s) {
  std::vector<uint8_t> out;
  Staging staging(s.device());
  for (const auto* list : {&s.plan().adam_m, &s.plan().adam_v})
    for (TensorId id : *list)
      staging.download(s.persistent_slice(id), [&](std::span<const std::byte> p, uint64_t) {
        const auto* b = reinterpret_cast<const uint8_t*>(p.data());
        out.insert(out.end(), b, b + p.size());
      });
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// The one-line message of what `f` throws, or "" when it does not.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a run saved and resumed in a new session ends bit-identical to one never stopped") {
  test::TempFolder dir("training_state_resume");
  std::vector<float> straight_losses, resumed_losses;
  std::vector<uint8_t> straight_params, straight_moments;
  {
    Session s(test::device(), config());
    for (uint32_t i = 0; i < 6; ++i) straight_losses.push_back(step(s, i));
    straight_params = test::parameter_bytes(s);
    straight_moments = moments(s);
  }
  {
    Session s(test::device(), config());
    for (uint32_t i = 0; i < 3; ++i) resumed_losses.push_back(step(s, i));
    RunRecord run;
    run.settings["note"] = "three of six";
    save_training_state(s, dir / "state", run);
  }
  SessionConfig other = config();
  other.policy = Policy::parse("every:1");  // recomputation changes nothing
  Session s(test::device(), other);
  const TrainingState st = load_training_state(s, dir / "state");
  CHECK(st.step == 3);
  CHECK(st.run.settings.at("note") == "three of six");
  CHECK(s.steps_done() == 3);
  for (uint32_t i = 3; i < 6; ++i) resumed_losses.push_back(step(s, i));
  CHECK(resumed_losses == straight_losses);
  CHECK(test::parameter_bytes(s) == straight_params);
  CHECK(moments(s) == straight_moments);

  // The state's configuration recreates the session.
  const SessionConfig again = session_config_of(st);
  CHECK(again.model == config().model);
  CHECK(again.schedule.decay == LrDecay::cosine);
  CHECK(again.schedule.warmup_steps == 2);
  CHECK(again.optimizer.grad_clip == 0.5f);
  CHECK(again.accum == 2);
}

TEST_CASE("the learning rate follows the session's schedule") {
  Session s(test::device(), config());
  CHECK(s.learning_rate() == 0.0);  // warmup starts at 0, as transformers' schedules do
  step(s, 0);
  CHECK(s.learning_rate() == Approx(1.5e-3));
  step(s, 1);
  CHECK(s.learning_rate() == 3e-3);
}

TEST_CASE("a damaged or mismatched training state is refused and leaves the session as it was") {
  test::TempFolder dir("training_state_damage");
  const fs::path good = dir / "good";
  {
    Session s(test::device(), config());
    step(s, 0);
    save_training_state(s, good, {});
  }
  Session s(test::device(), config());
  const auto before = test::parameter_bytes(s);
  auto damaged = [&](const std::string& name, auto&& damage) {
    const fs::path bad = dir / name;
    fs::remove_all(bad);
    fs::copy(good, bad);
    damage(bad);
    const std::string why = refusal([&] { load_training_state(s, bad); });
    INFO(name << ": " << why);
    CHECK(why.find('\n') == std::string::npos);
    CHECK(test::parameter_bytes(s) == before);
    CHECK(s.steps_done() == 0);
    return why;
  };
  const std::string json = slurp(good / "state.json");
  CHECK(damaged("bad_json", [&](const fs::path& d) {
          spit(d / "state.json", "{\"format\": 1,");
        }).find("state.json") != std::string::npos);
  CHECK(damaged("no_params", [&](const fs::path& d) {
          fs::remove(d / "params.safetensors");
        }).find("params.safetensors: missing") != std::string::npos);
  CHECK(damaged("no_json", [&](const fs::path& d) {
          fs::remove(d / "state.json");
        }).find("state.json: missing") != std::string::npos);
  const auto size = fs::file_size(good / "optimizer.safetensors");
  CHECK(damaged("truncated", [&](const fs::path& d) {
          fs::resize_file(d / "optimizer.safetensors", size - 9);
        }).find("optimizer.safetensors") != std::string::npos);
  CHECK(damaged("flipped", [&](const fs::path& d) {
          std::string bytes = slurp(d / "params.safetensors");
          bytes[bytes.size() - 3] ^= 1;  // a float's low mantissa bit: still finite
          spit(d / "params.safetensors", bytes);
        }).find("differ from the hash") != std::string::npos);
  CHECK(damaged("newer", [&](const fs::path& d) {
          std::string t = json;
          t.replace(t.find("\"format\": 1"), 11, "\"format\": 2");
          spit(d / "state.json", t);
        }).find("newer") != std::string::npos);
  CHECK(damaged("no_step", [&](const fs::path& d) {
          std::string t = json;
          t.replace(t.find("\"step\""), 6, "\"stop\"");
          spit(d / "state.json", t);
        }).find("\"step\" is missing") != std::string::npos);
  // Another model's tensors under this run's state.json: the shapes are refused by name.
  {
    SessionConfig wide = config();
    wide.model.dim = 64;
    Session w(test::device(), wide);
    save_training_state(w, dir / "wide", {});
  }
  CHECK(damaged("shapes", [&](const fs::path& d) {
          fs::copy_file(dir / "wide" / "params.safetensors", d / "params.safetensors",
                        fs::copy_options::overwrite_existing);
        }).find("is [61,64], this session's is [61,32]") != std::string::npos);

  // Another run's shape is named, not loaded.
  SessionConfig longer = config();
  longer.shape.batch = 3;
  Session l(test::device(), longer);
  CHECK(refusal([&] {
          load_training_state(l, good);
        }).find("the state's run has batch 2, this session 3") != std::string::npos);
}

TEST_CASE("a state save cancelled half-way leaves the previous state whole") {
  test::TempFolder dir("training_state_cancel");
  SessionConfig c = config();
  bool cancel = false;
  c.progress = [&](const ProgressEvent& e) {
    return !(cancel && e.phase == "save" && e.done * 2 > e.total);
  };
  Session s(test::device(), c);
  step(s, 0);
  save_training_state(s, dir / "state", {});
  const std::string json = slurp(dir / "state" / "state.json");
  const std::string params = slurp(dir / "state" / "params.safetensors");
  step(s, 1);
  cancel = true;
  CHECK_THROWS_AS(save_training_state(s, dir / "state", {}), Cancelled);
  CHECK(slurp(dir / "state" / "state.json") == json);
  CHECK(slurp(dir / "state" / "params.safetensors") == params);
  CHECK(dir.entries() == 1);  // no temporary folder left behind
  cancel = false;
  save_training_state(s, dir / "state", {});
  CHECK(parse_json(slurp(dir / "state" / "state.json")).find("step")->number == 2);
  CHECK(dir.entries() == 1);

  // A folder that is not a state is never replaced.
  fs::create_directories(dir / "mine");
  spit(dir / "mine" / "notes.txt", "keep");
  CHECK(refusal([&] { save_training_state(s, dir / "mine", {}); }).find("notes.txt") !=
        std::string::npos);
  CHECK(slurp(dir / "mine" / "notes.txt") == "keep");
}
