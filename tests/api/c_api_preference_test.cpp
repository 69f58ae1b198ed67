// The C API's preference tuning (remat_session_log_probs, remat_session_step_preference): a DPO
// session of params->preference trains exactly like the library's preference_step on the same
// rows and reference log-probs, starts at loss log 2 with every reward 0, and refuses a plain
// session, a wrong count and KTO labels given to DPO in one line each.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "runtime/preference_session.h"
#include "tests/api/api_test_params.h"
#include "tests/support/run_command.h"
#include "tests/support/test_device.h"
#include "tests/text/reference_data.h"

using remat::test::Handles;
using remat::test::small_params;

namespace {

constexpr std::size_t kSeq = 8;

// Pair b's chosen (rows 0, 1) and rejected (rows 2, 3) answers after a prompt: tokens, and the
// next token as target only within the answer.
remat::test::Tokens pair_rows() {
  remat::test::Tokens t;
  for (int which = 0; which < 2; ++which)
    for (uint32_t b = 0; b < 2; ++b) {
      std::vector<uint32_t> ids = {1 + b, 2, 3 + b};
      const std::size_t prompt = ids.size();
      for (uint32_t a :
           which == 0 ? std::vector<uint32_t>{10, 11, 12} : std::vector<uint32_t>{20, 21})
        ids.push_back(a);
      for (std::size_t i = 0; i < kSeq; ++i) {
        t.tokens.push_back(i < ids.size() ? ids[i] : 0);
        t.targets.push_back(i + 1 < ids.size() && i + 1 >= prompt ? ids[i + 1]
                                                                  : REMAT_IGNORE_TARGET);
      }
    }
  return t;
}

}  // namespace

TEST_CASE("C API: DPO steps train exactly like the library's preference step") {
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = small_params();
  p.preference = 1;
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const auto rows = pair_rows();
  std::vector<double> reference(4);
  REQUIRE(remat_session_log_probs(h.session, rows.tokens.data(), rows.targets.data(),
                                  rows.tokens.size(), reference.data(),
                                  reference.size()) == REMAT_OK);
  for (double r : reference) CHECK(r < 0);
  remat_preference_options o = remat_preference_options_default();
  o.beta = 0.5;
  std::vector<remat_preference_metrics> got(3);
  for (auto& m : got) {
    m.struct_size = sizeof m;
    REQUIRE(remat_session_step_preference(h.session, &o, rows.tokens.data(), rows.targets.data(),
                                          rows.tokens.size(), reference.data(), reference.size(),
                                          nullptr, 0, &m) == REMAT_OK);
  }
  CHECK(got[0].loss == Approx(std::log(2.0)).epsilon(1e-12));
  CHECK(got[0].rewards_margins == 0.0);
  CHECK(std::isnan(got[0].kl));
  CHECK(got[2].loss < got[0].loss);
  CHECK(got[2].rewards_accuracies == 1.0);

  remat::SessionConfig c;
  c.model = remat::ModelConfig{2, 32, 2, 64, 16};
  c.shape.seq = int(kSeq);
  c.optimizer.lr = 1e-2;
  c.seed = 7;
  remat::Session internal(remat::test::device(), remat::preference_session_config(c, 2));
  remat::Batch b{rows.tokens, rows.targets, {}};
  CHECK(remat::rows_log_probs(internal, b) == reference);
  remat::PreferenceConfig pc;
  pc.dpo.beta = 0.5;
  for (const auto& m : got) {
    const remat::PreferenceStep want = remat::preference_step(internal, pc, b, reference);
    CHECK(std::memcmp(&m.loss, &want.loss, sizeof want.loss) == 0);
    CHECK(m.rewards_margins == want.metric("rewards/margins"));
  }
}

TEST_CASE("C API: preference calls refuse what they cannot run, in one line") {
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = small_params();
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const auto rows = pair_rows();
  std::vector<double> reference(4, -3.0);
  const remat_preference_options o = remat_preference_options_default();
  auto step = [&](remat_session* s, std::size_t refs, const uint8_t* labels, std::size_t n) {
    return remat_session_step_preference(s, &o, rows.tokens.data(), rows.targets.data(),
                                         rows.tokens.size(), reference.data(), refs, labels, n,
                                         nullptr);
  };
  CHECK(step(h.session, 4, nullptr, 0) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("params->preference") != std::string::npos);

  Handles pref;
  REQUIRE(remat_device_open(nullptr, &pref.device) == REMAT_OK);
  p.preference = 1;
  REQUIRE(remat_session_create(pref.device, &p, &pref.session) == REMAT_OK);
  CHECK(step(pref.session, 3, nullptr, 0) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("reference log-prob") != std::string::npos);
  const uint8_t labels[2] = {1, 0};
  CHECK(step(pref.session, 4, labels, 2) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("DPO takes none") != std::string::npos);
  CHECK(step(pref.session, 4, nullptr, 0) == REMAT_OK);
}

TEST_CASE("samples/c_app/prefer.c: DPO through the C API raises the chosen answers' log-probs") {
  const auto dir = remat::test::scratch_dir("prefer_sample");
  {
    std::ofstream tsv(dir / "pairs.tsv");
    tsv << "Name a colour.\t Blue.\t Red.\nWhich colour?\t Blue.\t Red.\n"
           "A colour, please.\t Blue.\t Red.\n";
  }
  const std::string cmd = std::string("'") + REMAT_C_PREFER_SAMPLE_PATH + "' '" +
                          remat::test::gpt2_files().string() + "' '" +
                          (dir / "pairs.tsv").string() + "' 12";
  const auto r = remat::test::run_command(cmd);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("step 1  loss 0.6931  rewards/accuracies 0.00  rewards/margins 0.0000") !=
        std::string::npos);
  CHECK(r.out.find("step 12  loss ") != std::string::npos);
  CHECK(r.out.substr(r.out.find("step 12")).find("rewards/accuracies 1.00") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("C API: a preference session's state resumes with the batch in pairs, bit for bit") {
  const auto dir = remat::test::scratch_dir("prefer_state");
  const auto rows = pair_rows();
  remat_session_params p = small_params();
  p.preference = 1;
  const remat_preference_options o = remat_preference_options_default();
  auto step = [&](remat_session* s, const std::vector<double>& ref) {
    remat_preference_metrics m;
    m.struct_size = sizeof m;
    REQUIRE(remat_session_step_preference(s, &o, rows.tokens.data(), rows.targets.data(),
                                          rows.tokens.size(), ref.data(), ref.size(), nullptr, 0,
                                          &m) == REMAT_OK);
    return m.loss;
  };
  Handles a;
  REQUIRE(remat_device_open(nullptr, &a.device) == REMAT_OK);
  REQUIRE(remat_session_create(a.device, &p, &a.session) == REMAT_OK);
  std::vector<double> ref(4);
  REQUIRE(remat_session_log_probs(a.session, rows.tokens.data(), rows.targets.data(),
                                  rows.tokens.size(), ref.data(), ref.size()) == REMAT_OK);
  step(a.session, ref);
  REQUIRE(remat_session_save_state(a.session, (dir / "state").c_str()) == REMAT_OK);
  const double want = step(a.session, ref);

  remat_session_params q;
  remat_session_params_default(&q);
  REQUIRE(remat_session_params_from_state(&q, (dir / "state").c_str()) == REMAT_OK);
  CHECK(q.preference == 1);
  CHECK(q.batch == 2);
  Handles b;
  REQUIRE(remat_device_open(nullptr, &b.device) == REMAT_OK);
  REQUIRE(remat_session_create(b.device, &q, &b.session) == REMAT_OK);
  REQUIRE(remat_session_load_state(b.session, (dir / "state").c_str()) == REMAT_OK);
  const double got = step(b.session, ref);
  CHECK(std::memcmp(&got, &want, sizeof got) == 0);
  std::filesystem::remove_all(dir);
}
