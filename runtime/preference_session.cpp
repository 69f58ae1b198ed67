#include "runtime/preference_session.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace remat {

namespace {

std::size_t micro_batches(const Session& s) {
  return static_cast<std::size_t>(std::max(s.config().accum, 1));
}

// The micro-batch's objective on its 2B rows' log-probs: DPO's pairs are rows b and B + b, KTO's
// examples rows 0..B−1 and their KL rows B..2B−1.
PreferenceStep micro_step(const PreferenceConfig& c, std::span<const double> policy,
                          std::span<const double> ref, std::span<const uint8_t> desirable) {
  const std::size_t B = policy.size() / 2;
  if (c.objective == PreferenceObjective::dpo)
    return dpo_step(policy.first(B), policy.subspan(B), ref.first(B), ref.subspan(B), c.dpo);
  return kto_step(policy.first(B), ref.first(B), desirable, policy.subspan(B), ref.subspan(B),
                  c.kto);
}

// DPO over every pair of the step: its loss and metrics (the coefficients are the micro-batches').
PreferenceStep whole_dpo(const PreferenceConfig& c, std::span<const double> policy,
                         std::span<const double> ref, std::size_t rows) {
  const std::size_t B = rows / 2;
  std::vector<double> pc, pr, rc, rr;
  for (std::size_t m = 0; m < policy.size() / rows; ++m)
    for (std::size_t b = 0; b < B; ++b) {
      pc.push_back(policy[m * rows + b]);
      pr.push_back(policy[m * rows + B + b]);
      rc.push_back(ref[m * rows + b]);
      rr.push_back(ref[m * rows + B + b]);
    }
  return dpo_step(pc, pr, rc, rr, c.dpo);
}

// KTO over every example of the step at the step's one reference point: its loss and metrics
// (the coefficients are the micro-batches').
PreferenceStep whole_kto(const PreferenceConfig& c, std::span<const double> policy,
                         std::span<const double> ref, std::span<const uint8_t> desirable,
                         std::size_t rows, double kl) {
  const std::size_t B = rows / 2;
  std::vector<double> p, r;
  for (std::size_t m = 0; m < policy.size() / rows; ++m)
    for (std::size_t b = 0; b < B; ++b) {
      p.push_back(policy[m * rows + b]);
      r.push_back(ref[m * rows + b]);
    }
  return kto_step_at(p, r, desirable, kl, c.kto);
}

// KTO's reference point over the KL rows of every micro-batch (rows B..2B−1 of each), whose
// policy log-probs a forward pass gives before the first backward: the whole batch's estimate,
// so accumulated micro-batches train as the batch of all their examples does.
double step_reference_point(Session& session, const Batch& rows, std::span<const double> ref,
                            std::size_t R) {
  const std::vector<double> lp = rows_log_probs(session, rows);
  std::vector<double> policy_kl, ref_kl;
  for (std::size_t m = 0; m < lp.size() / R; ++m)
    for (std::size_t b = R / 2; b < R; ++b) {
      policy_kl.push_back(lp[m * R + b]);
      ref_kl.push_back(ref[m * R + b]);
    }
  return kto_reference_point(policy_kl, ref_kl);
}

// Batch `whole`'s rows (E examples, then their E KL rows) as micro-batches of B examples each
// followed by its examples' KL rows, the layout preference_step takes.
Batch micro_layout(const Batch& whole, std::size_t B, std::size_t T) {
  const std::size_t E = whole.tokens.size() / (2 * T);
  Batch out;
  auto copy_row = [&](std::size_t r) {
    const auto at = std::ptrdiff_t(r * T), end = std::ptrdiff_t((r + 1) * T);
    out.tokens.insert(out.tokens.end(), whole.tokens.begin() + at, whole.tokens.begin() + end);
    out.targets.insert(out.targets.end(), whole.targets.begin() + at, whole.targets.begin() + end);
  };
  for (std::size_t m = 0; m < E / B; ++m) {
    for (std::size_t b = 0; b < B; ++b) copy_row(m * B + b);
    for (std::size_t b = 0; b < B; ++b) copy_row(E + m * B + b);
  }
  return out;
}

}  // namespace

SessionConfig preference_session_config(SessionConfig sft, int examples) {
  if (examples < 1) throw std::invalid_argument("a preference batch needs at least one example");
  sft.shape.batch = 2 * examples;
  sft.shape.row_loss_scales = true;
  if (sft.shape.packed)
    throw std::invalid_argument("preference rows hold one answer each: they cannot be packed");
  return sft;
}

PreferenceStep preference_step(Session& session, const PreferenceConfig& config, const Batch& rows,
                               std::span<const double> reference,
                               std::span<const uint8_t> desirable) {
  const auto R = static_cast<std::size_t>(session.config().shape.batch);
  const auto T = static_cast<std::size_t>(session.config().shape.seq);
  const std::size_t micro = micro_batches(session), B = R / 2;
  const bool kto = config.objective == PreferenceObjective::kto;
  if (rows.tokens.size() != micro * R * T || reference.size() != micro * R ||
      (kto && desirable.size() != micro * B))
    throw std::invalid_argument(
        "a preference step takes " + std::to_string(micro) + " micro-batch(es) of " +
        std::to_string(R) + " rows of " + std::to_string(T) + " tokens with a reference log-prob " +
        "each" + (kto ? " and " + std::to_string(B) + " labels" : std::string()) + "; got " +
        std::to_string(rows.tokens.size()) + " tokens, " + std::to_string(reference.size()) +
        " reference log-probs" + (kto ? ", " + std::to_string(desirable.size()) + " labels" : ""));
  // One micro-batch is the whole batch: its KL rows are the batch's (TRL's estimate).
  const bool shared_kl = kto && micro > 1;
  const double kl = shared_kl ? step_reference_point(session, rows, reference, R) : 0.0;
  std::vector<double> policy(micro * R);
  std::vector<PreferenceStep> steps(micro);
  std::vector<double> coefficients;
  session.step_rows(rows.tokens, rows.targets, [&](std::size_t m, std::span<const double> lp) {
    std::copy(lp.begin(), lp.end(), policy.begin() + std::ptrdiff_t(m * R));
    const auto labels = kto ? desirable.subspan(m * B, B) : std::span<const uint8_t>{};
    steps[m] = shared_kl
                   ? kto_step_at(lp.first(B), reference.subspan(m * R, B), labels, kl, config.kto)
                   : micro_step(config, lp, reference.subspan(m * R, R), labels);
    std::vector<double> c = steps[m].row_coefficients;
    // The loss is the mean over the step's examples: each micro-batch's mean weighs 1/accum.
    if (micro > 1)
      for (double& x : c) x /= double(micro);
    coefficients.insert(coefficients.end(), c.begin(), c.end());
    return c;
  });
  if (micro == 1) return steps.front();
  PreferenceStep out = kto ? whole_kto(config, policy, reference, desirable, R, kl)
                           : whole_dpo(config, policy, reference, R);
  out.row_coefficients = std::move(coefficients);
  return out;
}

std::vector<double> rows_log_probs(Session& session, const Batch& rows) {
  const std::size_t n =
      static_cast<std::size_t>(session.config().shape.batch) * session.config().shape.seq;
  if (rows.tokens.size() % n != 0 || rows.targets.size() != rows.tokens.size())
    throw std::invalid_argument("row log-probs take whole batches of " + std::to_string(n) +
                                " tokens and targets");
  std::vector<double> out;
  for (std::size_t i = 0; i < rows.tokens.size(); i += n) {
    const auto lp = session.row_log_probs(std::span(rows.tokens).subspan(i, n),
                                          std::span(rows.targets).subspan(i, n));
    out.insert(out.end(), lp.begin(), lp.end());
  }
  return out;
}

PreferenceTrainer::PreferenceTrainer(Session& session, const PreferenceRows& rows,
                                     PreferenceConfig config, int examples)
    : session_(session), rows_(rows), config_(config), examples_(examples) {
  if (session.config().shape.batch != 2 * examples || !session.plan().row_loss_scales)
    throw std::invalid_argument("a preference trainer of " + std::to_string(examples) +
                                " examples a batch needs a session from "
                                "preference_session_config with that batch");
  if (rows.objective() != config.objective)
    throw std::invalid_argument(std::string("the data is for ") + objective_name(rows.objective()) +
                                ", not " + objective_name(config.objective));
}

uint64_t PreferenceTrainer::step_examples() const {
  return uint64_t(examples_) * micro_batches(session_);
}

uint64_t PreferenceTrainer::kl_period() const {
  const auto n = uint64_t(rows_.size()), E = step_examples();
  return n / std::gcd(n, E);
}

uint64_t PreferenceTrainer::reference_batches() const {
  if (config_.objective == PreferenceObjective::kto) return kl_period() * micro_batches(session_);
  return (uint64_t(rows_.size()) + uint64_t(examples_) - 1) / uint64_t(examples_);
}

void PreferenceTrainer::compute_reference(const std::function<void(uint64_t, uint64_t)>& progress) {
  if (config_.objective == PreferenceObjective::kto) return compute_kto_reference(progress);
  const auto B = static_cast<std::size_t>(examples_);
  ReferenceLogProbs r;
  r.answers.assign(rows_.size() * 2, 0.0);
  const uint64_t total = reference_batches();
  for (uint64_t k = 0; k < total; ++k) {
    const Batch b = rows_.batch(k, examples_);
    const std::vector<double> lp = session_.row_log_probs(b.tokens, b.targets);
    for (std::size_t j = 0; j < B; ++j) {
      const std::size_t i = rows_.example_of(k, examples_, int(j));
      r.answers[2 * i] = lp[j];
      r.answers[2 * i + 1] = lp[B + j];
    }
    if (progress) progress(k + 1, total);
  }
  reference_ = std::move(r);
}

void PreferenceTrainer::compute_kto_reference(
    const std::function<void(uint64_t, uint64_t)>& progress) {
  const auto B = static_cast<std::size_t>(examples_);
  const auto E = static_cast<int>(step_examples());
  const std::size_t micro = micro_batches(session_), R = 2 * B, T = std::size_t(rows_.seq());
  ReferenceLogProbs r;
  r.answers.assign(rows_.size(), 0.0);
  r.kl.assign(kl_period() * std::size_t(E), 0.0);
  const uint64_t total = reference_batches();
  for (uint64_t k = 0; k < kl_period(); ++k) {
    // The step's batch of E examples and E KL rows, run as its micro-batches are.
    const Batch whole = micro_layout(rows_.batch(k, E), B, T);
    for (std::size_t m = 0; m < micro; ++m) {
      const auto at = std::ptrdiff_t(m * R * T), end = std::ptrdiff_t((m + 1) * R * T);
      const std::vector<double> lp = session_.row_log_probs(
          std::span(whole.tokens.begin() + at, whole.tokens.begin() + end),
          std::span(whole.targets.begin() + at, whole.targets.begin() + end));
      for (std::size_t j = 0; j < B; ++j) {
        r.answers[rows_.example_of(k, E, int(m * B + j))] = lp[j];
        r.kl[k * std::size_t(E) + m * B + j] = lp[B + j];
      }
      if (progress) progress(k * micro + m + 1, total);
    }
  }
  reference_ = std::move(r);
}

void PreferenceTrainer::set_reference(ReferenceLogProbs reference) {
  const bool kto = config_.objective == PreferenceObjective::kto;
  const std::size_t answers = rows_.size() * (kto ? 1 : 2);
  const std::size_t kl = kto ? kl_period() * std::size_t(step_examples()) : 0;
  if (reference.answers.size() != answers || reference.kl.size() != kl)
    throw std::invalid_argument(
        "the saved reference log-probs (" + std::to_string(reference.answers.size()) +
        " answers, " + std::to_string(reference.kl.size()) + " KL rows) are not this " +
        "data's (" + std::to_string(answers) + " and " + std::to_string(kl) + ")");
  reference_ = std::move(reference);
}

PreferenceTrainer::StepRows PreferenceTrainer::step_rows(uint64_t s) const {
  if (reference_.answers.empty())
    throw std::logic_error("PreferenceTrainer: the reference log-probs are not computed");
  if (config_.objective == PreferenceObjective::kto) return kto_step_rows(s);
  const auto B = static_cast<std::size_t>(examples_);
  const uint64_t micro = micro_batches(session_);
  StepRows out;
  for (uint64_t m = 0; m < micro; ++m) {
    const uint64_t k = s * micro + m;
    const Batch b = rows_.batch(k, examples_);
    out.rows.tokens.insert(out.rows.tokens.end(), b.tokens.begin(), b.tokens.end());
    out.rows.targets.insert(out.rows.targets.end(), b.targets.begin(), b.targets.end());
    std::vector<double> rejected(B);
    for (std::size_t j = 0; j < B; ++j) {
      const std::size_t i = rows_.example_of(k, examples_, int(j));
      out.reference.push_back(reference_.answers[2 * i]);
      rejected[j] = reference_.answers[2 * i + 1];
    }
    out.reference.insert(out.reference.end(), rejected.begin(), rejected.end());
  }
  return out;
}

// KTO's step s is the batch of all its micro-batches' examples, whose KL rows pair within that
// whole batch (not within each micro-batch), so accumulation trains as the whole batch does.
PreferenceTrainer::StepRows PreferenceTrainer::kto_step_rows(uint64_t s) const {
  const auto B = static_cast<std::size_t>(examples_);
  const auto E = static_cast<int>(step_examples());
  StepRows out;
  out.rows = micro_layout(rows_.batch(s, E), B, std::size_t(rows_.seq()));
  const std::size_t kl_at = std::size_t(s % kl_period()) * std::size_t(E);
  for (std::size_t m = 0; m < std::size_t(E) / B; ++m) {
    for (std::size_t j = 0; j < B; ++j)
      out.reference.push_back(reference_.answers[rows_.example_of(s, E, int(m * B + j))]);
    for (std::size_t j = 0; j < B; ++j) out.reference.push_back(reference_.kl[kl_at + m * B + j]);
  }
  out.desirable = rows_.desirable(s, E);
  return out;
}

PreferenceStep PreferenceTrainer::step(uint64_t s) {
  const StepRows r = step_rows(s);
  return preference_step(session_, config_, r.rows, r.reference, r.desirable);
}

}  // namespace remat
