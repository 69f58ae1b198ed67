// Preference tuning through the session (runtime/preference_session.h) on a tiny GPT with
// hand-made token examples: DPO's losses and LoRA adapters are bit-identical under every
// checkpoint plan, auto at the smallest arena included; two micro-batches of pairs train like
// one batch of both, and KTO's three micro-batches of one example like one batch of three (its
// KL rows and reference point the whole batch's); the reference log-probs are the base model's run
// alone; and a model trained on pairs preferring one of two fixed answers raises that answer's
// log-prob over the other's, with rewards/accuracies reaching 1.
#include <catch2/catch.hpp>

#include <cmath>

#include "formats/gguf_model.h"
#include "formats/peft_adapter.h"
#include "runtime/preference_session.h"
#include "runtime/session_files.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/llama_cpp_library.h"

using namespace remat;

namespace {

constexpr int kSeq = 12;

// prompt then answer; only the answer's tokens are trained (as an SFT completion's row).
TokenExample answer(std::vector<uint32_t> prompt, std::vector<uint32_t> reply, std::size_t line) {
  TokenExample e;
  e.ids = prompt;
  e.mask.assign(prompt.size(), 0);
  e.ids.insert(e.ids.end(), reply.begin(), reply.end());
  e.mask.insert(e.mask.end(), reply.size(), 1);
  e.line = line;
  return e;
}

// Seven pairs (an odd count: batches wrap) whose chosen answer is always 7 8 9 and rejected
// answer 20 21 22, after prompts of different lengths.
std::vector<PreferencePair> fixed_pairs() {
  std::vector<PreferencePair> pairs;
  for (uint32_t i = 0; i < 7; ++i) {
    std::vector<uint32_t> prompt;
    for (uint32_t k = 0; k <= i % 4; ++k) prompt.push_back(30 + 3 * i + k);
    pairs.push_back({answer(prompt, {7, 8, 9}, i + 1), answer(prompt, {20, 21, 22}, i + 1)});
  }
  return pairs;
}

// The pairs' answers as seven labelled examples, desirable and undesirable in turn.
std::vector<FeedbackExample> fixed_feedback() {
  std::vector<FeedbackExample> out;
  const std::vector<PreferencePair> pairs = fixed_pairs();
  for (std::size_t i = 0; i < pairs.size(); ++i)
    out.push_back(i % 2 == 0 ? FeedbackExample{pairs[i].chosen, true}
                             : FeedbackExample{pairs[i].rejected, false});
  return out;
}

SessionConfig base_config(int lora_rank) {
  SessionConfig c;
  c.model = ModelConfig{2, 48, 3, 101, 32};
  c.shape.seq = kSeq;
  c.lora.rank = lora_rank;
  c.optimizer.lr = 1e-2;
  c.seed = 91;
  return c;
}

struct Run {
  std::vector<double> losses;
  std::vector<PreferenceStep> steps;
  std::vector<std::pair<std::string, std::vector<float>>> params;
  ReferenceLogProbs reference;
};

// The largest difference between two runs' updates from `initial`, and the largest update.
std::pair<double, double> update_difference(const Run& a, const Run& b, const Run& initial) {
  double worst = 0, largest = 0;
  for (std::size_t p = 0; p < b.params.size(); ++p)
    for (std::size_t i = 0; i < b.params[p].second.size(); ++i) {
      const double w0 = initial.params[p].second[i];
      const double d = b.params[p].second[i] - w0;
      largest = std::max(largest, std::abs(d));
      worst = std::max(worst, std::abs(d - (a.params[p].second[i] - w0)));
    }
  return {worst, largest};
}

Run train(SessionConfig sft, int pairs_per_batch, int steps, const PreferenceRows& rows,
          const std::string& policy = "none", std::optional<uint64_t> arena = {}) {
  PreferenceConfig pc;
  pc.objective = rows.objective();
  pc.dpo.beta = 0.5;
  pc.kto.beta = 0.5;
  sft.policy = Policy::parse(policy);
  sft.arena_budget = arena;
  Session s(test::device(), preference_session_config(sft, pairs_per_batch));
  PreferenceTrainer t(s, rows, pc, pairs_per_batch);
  t.compute_reference();
  Run r;
  for (int k = 0; k < steps; ++k) {
    r.steps.push_back(t.step(uint64_t(k)));
    r.losses.push_back(r.steps.back().loss);
  }
  r.params = s.parameters();
  r.reference = t.reference();
  const MemoryReport m = s.memory();
  CHECK(m.device_bytes_allocated == m.planned_total_bytes);
  return r;
}

}  // namespace

TEST_CASE("DPO: losses and adapters are bit-identical under every checkpoint plan") {
  const PreferenceRows rows(fixed_pairs(), kSeq, 0, "pairs");
  const SessionConfig c = base_config(4);
  const Run none = train(c, 2, 3, rows);
  SessionConfig shaped = preference_session_config(c, 2);
  const uint64_t minimum = minimum_arena_bytes(
      shaped.model, shaped.shape, session_alignment(test::device()), nullptr, shaped.lora);
  for (const auto& [policy, arena] :
       {std::pair<std::string, std::optional<uint64_t>>{"every:1", std::nullopt},
        std::pair<std::string, std::optional<uint64_t>>{"auto", minimum}}) {
    INFO(policy);
    const Run other = train(c, 2, 3, rows, policy, arena);
    CHECK(other.losses == none.losses);
    CHECK(other.params == none.params);
  }
  CHECK(none.losses.front() == Approx(std::log(2.0)).epsilon(1e-12));
  CHECK(none.losses.back() < none.losses.front());
}

TEST_CASE("DPO: two micro-batches of two pairs train like one batch of four") {
  const PreferenceRows rows(fixed_pairs(), kSeq, 0, "pairs");
  // eps 1 makes AdamW's update nearly linear in the gradient, so comparing updates compares
  // gradients (as tests/training/accumulation_test.cpp does): with eps 1e-8 the first updates
  // are lr·sign(g), decided for gradients that are 0 up to rounding by the summation order.
  SessionConfig one = base_config(0);
  one.optimizer.eps = 1.0;
  SessionConfig split = one;
  split.accum = 2;
  const Run a = train(split, 2, 3, rows);
  const Run whole = train(one, 4, 3, rows);
  for (std::size_t k = 0; k < a.losses.size(); ++k) {
    CHECK(a.losses[k] == Approx(whole.losses[k]).epsilon(1e-5));
    CHECK(a.steps[k].metric("rewards/margins") ==
          Approx(whole.steps[k].metric("rewards/margins")).epsilon(1e-3).margin(1e-6));
  }
  const auto [worst, largest] = update_difference(a, whole, train(one, 4, 0, rows));
  INFO("worst update difference " << worst << " of the largest update " << largest);
  CHECK(worst < 1e-3 * largest);
  CHECK(largest > 0);
}

TEST_CASE("KTO: three micro-batches of one example train like one batch of three") {
  const PreferenceRows rows(fixed_feedback(), kSeq, 0, "feedback");
  SessionConfig one = base_config(0);
  one.optimizer.eps = 1.0;  // updates nearly linear in the gradient (the DPO case above)
  one.optimizer.lr = 5e-2;
  SessionConfig split = one;
  split.accum = 3;
  const Run a = train(split, 1, 4, rows);
  const Run whole = train(one, 3, 4, rows);
  // The KL rows are the whole batch's: their reference log-probs are the same rows'.
  REQUIRE(a.reference.kl.size() == whole.reference.kl.size());
  for (std::size_t i = 0; i < a.reference.kl.size(); ++i)
    CHECK(a.reference.kl[i] == Approx(whole.reference.kl[i]).epsilon(1e-6));
  bool kl_positive = false;
  for (std::size_t k = 0; k < a.losses.size(); ++k) {
    INFO("step " << k);
    CHECK(a.losses[k] == Approx(whole.losses[k]).epsilon(1e-5));
    const double kl = whole.steps[k].metric("kl");
    kl_positive = kl_positive || kl > 1e-3;
    CHECK(a.steps[k].metric("kl") == Approx(kl).epsilon(1e-3).margin(1e-6));
    CHECK(a.steps[k].metric("rewards/margins") ==
          Approx(whole.steps[k].metric("rewards/margins")).epsilon(1e-3).margin(1e-6));
  }
  // A reference point above 0 is what a per-micro-batch estimate would get wrong.
  CHECK(kl_positive);
  const auto [worst, largest] = update_difference(a, whole, train(one, 3, 0, rows));
  INFO("worst update difference " << worst << " of the largest update " << largest);
  CHECK(worst < 1e-3 * largest);
  CHECK(largest > 0);
}

TEST_CASE("DPO: the reference log-probs are the base model's run alone") {
  const PreferenceRows rows(fixed_pairs(), kSeq, 0, "pairs");
  test::TempFolder d("pref_reference");
  // A full model's weights, saved, are the LoRA session's frozen base.
  Session full(test::device(), base_config(0));
  full.save(d / "base.safetensors");
  SessionConfig lora = preference_session_config(base_config(4), 2);
  Session s(test::device(), lora);
  s.load(d / "base.safetensors");
  PreferenceTrainer t(s, rows, {}, 2);
  t.compute_reference();
  // The base alone, a plain session without adapters, on the same rows.
  SessionConfig plain = base_config(0);
  plain.shape.batch = 4;
  Session alone(test::device(), plain);
  alone.load(d / "base.safetensors");
  for (uint64_t k = 0; k < 4; ++k) {
    const Batch b = rows.batch(k, 2);
    const std::vector<double> lp = alone.row_log_probs(b.tokens, b.targets);
    for (int j = 0; j < 2; ++j) {
      const std::size_t i = rows.example_of(k, 2, j);
      INFO("batch " << k << ", pair " << i);
      CHECK(lp[j] == t.reference().answers[2 * i]);
      CHECK(lp[2 + j] == t.reference().answers[2 * i + 1]);
      CHECK(lp[j] < 0);
    }
  }
}

TEST_CASE("DPO: pairs preferring one answer raise its log-prob over the other's") {
  const PreferenceRows rows(fixed_pairs(), kSeq, 0, "pairs");
  const Run r = train(base_config(0), 2, 30, rows);
  const PreferenceStep& first = r.steps.front();
  const PreferenceStep& last = r.steps.back();
  INFO("margin " << first.metric("logps/chosen") - first.metric("logps/rejected") << " -> "
                 << last.metric("logps/chosen") - last.metric("logps/rejected"));
  // At the start the policy is the reference: every reward 0, the loss log 2.
  CHECK(first.metric("rewards/margins") == 0.0);
  CHECK(first.metric("rewards/accuracies") == 0.0);
  CHECK(last.metric("rewards/accuracies") == 1.0);
  CHECK(last.metric("rewards/chosen") > 0);
  CHECK(last.metric("rewards/rejected") < 0);
  CHECK(last.metric("logps/chosen") - last.metric("logps/rejected") >
        first.metric("logps/chosen") - first.metric("logps/rejected") + 5.0);
  CHECK(last.loss < 0.1);
}

TEST_CASE("DPO: QLoRA on a Q4_K_M base trains, bit-identical under two plans") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("pref_qlora");
  // Rows of 256 values, so that llama.cpp's K-quants apply.
  SessionConfig c = base_config(4);
  c.model = ModelConfig{2, 256, 4, 101, 32};
  {
    SessionConfig f = base_config(0);
    f.model = c.model;
    Session wide(test::device(), f);
    save_checkpoint(wide, d / "f32.gguf");
  }
  llama_model_quantize_params qp = l->quantize_default_params();
  qp.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
  qp.nthread = 2;
  const auto q = d / "q4_k_m.gguf";
  REQUIRE(l->quantize((d / "f32.gguf").c_str(), q.c_str(), &qp) == 0);
  c.shape.block_weights = GgufWeights(GgufFile::open(q)).block_weights();
  REQUIRE(!c.shape.block_weights.empty());
  const PreferenceRows rows(fixed_pairs(), kSeq, 0, "pairs");
  std::vector<Run> runs;
  for (const char* policy : {"none", "every:1"}) {
    SessionConfig p = c;
    p.policy = Policy::parse(policy);
    Session s(test::device(), preference_session_config(p, 2));
    s.load(q);
    std::size_t blocks = 0;
    for (TensorId id : s.plan().frozen)
      blocks += s.plan().tensors.at(std::size_t(id)).tensor.dtype == DType::blocks;
    CHECK(blocks == c.shape.block_weights.size());
    PreferenceConfig pc;
    pc.dpo.beta = 0.5;
    PreferenceTrainer t(s, rows, pc, 2);
    t.compute_reference();
    Run r;
    for (uint64_t k = 0; k < 3; ++k) {
      r.steps.push_back(t.step(k));
      r.losses.push_back(r.steps.back().loss);
    }
    r.params = s.parameters();
    runs.push_back(std::move(r));
  }
  CHECK(runs[1].losses == runs[0].losses);
  CHECK(runs[1].params == runs[0].params);
  CHECK(runs[0].losses.front() == Approx(std::log(2.0)).epsilon(1e-12));
  CHECK(runs[0].losses.back() < runs[0].losses.front());
#else
  test::llama_cpp();
#endif
}
