// Preference losses on the host, in float64: from each example's sequence log-probabilities
// (policy and reference, each the sum of log p over the answer's trained tokens) to the batch
// loss, TRL's logged metrics, and for every row run the coefficient dL/d(row's summed answer
// log-prob). The runtime scales each row's token-level backward by that coefficient; the model's
// gradient is then the loss's, because the loss reaches the weights only through those sums.
//
// DPO (Rafailov et al. 2023, "Direct Preference Optimization", arXiv:2305.18290, eq. 7), as
// TRL's DPOTrainer with loss_type "sigmoid" and label smoothing ε (conservative DPO: Mitchell
// 2023, "A note on DPO with noisy preferences"): with
//   z = (π_c − ref_c) − (π_r − ref_r)
//   ℓ = −(1 − ε) log σ(βz) − ε log σ(−βz)
// and the loss the mean of ℓ over the batch's pairs. Rows are chosen 0..B−1, then rejected
// B..2B−1 (formats/preference_rows.h).
//
// KTO (Ethayarajh et al. 2024, "KTO: Model Alignment as Prospect Theoretic Optimization",
// arXiv:2402.01306), as TRL's KTOTrainer with loss_type "kto": the reference point z_0 is the
// batch estimate
//   kl = max(0, mean_i(π_KL,i − ref_KL,i)),
// detached (no gradient flows through it), over the B mismatched prompt/completion rows; with
// r = π − ref, a desirable example loses w_d (1 − σ(β(r − kl))) and an undesirable one
// w_u (1 − σ(β(kl − r))); the loss is the mean over the batch's B examples. Rows are the B
// examples, then the B KL rows (forward only: coefficient 0).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace remat {

struct DpoOptions {
  double beta = 0.1;
  double label_smoothing = 0;  // ε in [0, 0.5]
};

struct KtoOptions {
  double beta = 0.1;
  double desirable_weight = 1;
  double undesirable_weight = 1;
};

struct PreferenceStep {
  double loss = 0;
  // Per row run, in the batch's row order: dL/d(the row's summed answer log-prob).
  std::vector<double> row_coefficients;
  // TRL's logged names and values, in a fixed order (below).
  std::vector<std::pair<std::string, double>> metrics;
  // The metric `name`; std::invalid_argument when the step has none of that name.
  double metric(const std::string& name) const;
};

// B pairs: every span holds B values. Metrics, as TRL's DPOTrainer logs them (rewards are
// β(π − ref) per answer, means over the pairs): rewards/chosen, rewards/rejected,
// rewards/accuracies (the share of pairs whose chosen reward is strictly larger),
// rewards/margins, logps/chosen, logps/rejected. std::invalid_argument for B = 0, spans of
// different sizes, β <= 0 or ε outside [0, 0.5].
PreferenceStep dpo_step(std::span<const double> policy_chosen,
                        std::span<const double> policy_rejected, std::span<const double> ref_chosen,
                        std::span<const double> ref_rejected, const DpoOptions& options);

// B labelled examples (desirable[i] nonzero: thumbs up) and their B KL rows. Metrics, as TRL's
// KTOTrainer logs them: kl, then for each kind present in the batch rewards/chosen,
// logps/chosen (means over the desirable examples) and rewards/rejected, logps/rejected (over
// the undesirable ones), and rewards/margins when both are present. std::invalid_argument for
// B = 0, spans of different sizes, β <= 0 or a negative weight.
PreferenceStep kto_step(std::span<const double> policy, std::span<const double> ref,
                        std::span<const uint8_t> desirable, std::span<const double> policy_kl,
                        std::span<const double> ref_kl, const KtoOptions& options);

// KTO's reference point from B KL rows: max(0, mean_i(π_KL,i − ref_KL,i)), detached.
// std::invalid_argument for no rows or spans of different sizes.
double kto_reference_point(std::span<const double> policy_kl, std::span<const double> ref_kl);

// kto_step with the reference point `kl` given (a whole step's, estimated over the KL rows of
// every micro-batch): the B examples' loss, metrics and coefficients, then B zero coefficients
// for the KL rows.
PreferenceStep kto_step_at(std::span<const double> policy, std::span<const double> ref,
                           std::span<const uint8_t> desirable, double kl,
                           const KtoOptions& options);

// log σ(x), exact for large |x| of either sign.
double log_sigmoid(double x);

}  // namespace remat
