// Training a Session on a preference objective (DPO, KTO: graph/preference_loss.h) over the
// rows formats/preference_rows.h builds. A row's sequence log-prob is minus the sum of its
// trained targets' losses, which the forward pass computes; the objective reaches the weights
// only through those sums, so its gradient is each row's cross-entropy gradient scaled by the
// row's coefficient (Session::step_rows). The reference model's log-probs are computed once per
// example at the start with forward passes (TRL's precompute_ref_log_probs): under LoRA the
// adapters start at B = 0, so the initial model is the base with adapters off; with full
// fine-tuning the initial weights are the frozen reference. They are kept on the host and saved
// with the training state (runtime/training_state.h), so a resumed run is byte-identical.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "formats/preference_rows.h"
#include "graph/preference_loss.h"
#include "runtime/session.h"

namespace remat {

struct PreferenceConfig {
  PreferenceObjective objective = PreferenceObjective::dpo;
  DpoOptions dpo;
  KtoOptions kto;
};

// The session a preference objective trains: `sft`'s shape with twice its batch of rows (B
// examples run 2B rows: chosen and rejected answers, or KTO's examples and KL rows) and one loss
// scale per row. `examples` is B.
SessionConfig preference_session_config(SessionConfig sft, int examples);

// One optimizer step on `rows` (accum micro-batches of 2B rows each, laid out as
// PreferenceRows::batch gives them) with each row's reference log-prob (`reference`, parallel
// to the rows) and, for KTO, each micro-batch's labels one after the other (`desirable`, B per
// micro-batch). The loss is the mean over the step's examples: each micro-batch's coefficients
// are its own mean's divided by accum, and for DPO the loss and metrics are those of every pair
// of the step together. KTO's KL reference point is the whole step's: with several micro-batches
// a forward pass over every micro-batch's KL rows (rows B..2B−1 of each) estimates it before the
// first backward, and the loss and metrics are those of every example of the step at that point,
// so accumulated micro-batches train as one batch of all their examples (up to float summation
// order) where TRL's trainer estimates it per micro-batch.
PreferenceStep preference_step(Session& session, const PreferenceConfig& config, const Batch& rows,
                               std::span<const double> reference,
                               std::span<const uint8_t> desirable = {});

// Every row's log-prob under the session's current weights, forward only with dropout off
// (Session::row_log_probs), for `rows` of any multiple of the session's batch of rows.
std::vector<double> rows_log_probs(Session& session, const Batch& rows);

// The reference log-probs of a data set: per kept example its answers' (DPO: chosen at 2i,
// rejected at 2i + 1; KTO: example i at i), and KTO's KL rows, which depend on the step's batch
// of E = B · accum examples: KL row b of step k's batch at (k mod period)·E + b, where batches
// repeat with period count / gcd(count, E).
struct ReferenceLogProbs {
  std::vector<double> answers;
  std::vector<double> kl;
};

class PreferenceTrainer {
 public:
  // `session` from preference_session_config with B = `examples`; `rows` outlives the trainer.
  PreferenceTrainer(Session& session, const PreferenceRows& rows, PreferenceConfig config,
                    int examples);
  // Forward passes over every batch that holds an example (or KL row) not yet seen; `progress`
  // gets (done, total) after each. Call before the first step.
  void compute_reference(const std::function<void(uint64_t, uint64_t)>& progress = {});
  // A saved state's: std::invalid_argument when the sizes are not this data's.
  void set_reference(ReferenceLogProbs reference);
  const ReferenceLogProbs& reference() const { return reference_; }
  // Forward passes compute_reference runs.
  uint64_t reference_batches() const;
  // Optimizer step s: micro-batch m is batch index s·accum + m (KTO: examples m·B .. m·B + B − 1
  // of step s's batch of B · accum, with their KL rows of that batch).
  PreferenceStep step(uint64_t s);
  // The rows, references and labels of step s, as step(s) passes them to preference_step.
  struct StepRows {
    Batch rows;
    std::vector<double> reference;
    std::vector<uint8_t> desirable;
  };
  StepRows step_rows(uint64_t s) const;

 private:
  // Examples an optimizer step takes: B · accum.
  uint64_t step_examples() const;
  uint64_t kl_period() const;
  void compute_kto_reference(const std::function<void(uint64_t, uint64_t)>& progress);
  StepRows kto_step_rows(uint64_t s) const;

  Session& session_;
  const PreferenceRows& rows_;
  PreferenceConfig config_;
  int examples_;
  ReferenceLogProbs reference_;
};

}  // namespace remat
