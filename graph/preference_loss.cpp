#include "graph/preference_loss.h"

#include <cmath>
#include <stdexcept>

namespace remat {

namespace {

double sigmoid(double x) {
  // Both branches avoid exp of a large positive number.
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

void require_sizes(std::size_t b, std::initializer_list<std::size_t> sizes, const char* what) {
  if (b == 0) throw std::invalid_argument(std::string(what) + ": a batch of no examples");
  for (std::size_t n : sizes)
    if (n != b)
      throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                  " values where the batch has " + std::to_string(b));
}

double mean(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

}  // namespace

double log_sigmoid(double x) {
  // log σ(x) = −log(1 + e^−x) = min(x, 0) − log1p(e^−|x|).
  return std::fmin(x, 0.0) - std::log1p(std::exp(-std::fabs(x)));
}

double PreferenceStep::metric(const std::string& name) const {
  for (const auto& [key, value] : metrics)
    if (key == name) return value;
  throw std::invalid_argument("no preference metric named " + name);
}

PreferenceStep dpo_step(std::span<const double> policy_chosen,
                        std::span<const double> policy_rejected, std::span<const double> ref_chosen,
                        std::span<const double> ref_rejected, const DpoOptions& options) {
  const std::size_t b = policy_chosen.size();
  require_sizes(b, {policy_rejected.size(), ref_chosen.size(), ref_rejected.size()}, "dpo");
  if (!(options.beta > 0)) throw std::invalid_argument("dpo: beta must be above 0");
  if (!(options.label_smoothing >= 0 && options.label_smoothing <= 0.5))
    throw std::invalid_argument("dpo: label smoothing must lie in [0, 0.5]");
  const double beta = options.beta, eps = options.label_smoothing;
  PreferenceStep step;
  step.row_coefficients.assign(2 * b, 0.0);
  std::vector<double> chosen_rewards(b), rejected_rewards(b), margins(b);
  double accurate = 0;
  for (std::size_t i = 0; i < b; ++i) {
    const double z = (policy_chosen[i] - ref_chosen[i]) - (policy_rejected[i] - ref_rejected[i]);
    step.loss += -(1 - eps) * log_sigmoid(beta * z) - eps * log_sigmoid(-beta * z);
    // dℓ/dz = −(1 − ε) β σ(−βz) + ε β σ(βz), since d log σ(x)/dx = σ(−x).
    const double dz = (-(1 - eps) * sigmoid(-beta * z) + eps * sigmoid(beta * z)) * beta;
    step.row_coefficients[i] = dz / double(b);
    step.row_coefficients[b + i] = -dz / double(b);
    chosen_rewards[i] = beta * (policy_chosen[i] - ref_chosen[i]);
    rejected_rewards[i] = beta * (policy_rejected[i] - ref_rejected[i]);
    margins[i] = chosen_rewards[i] - rejected_rewards[i];
    if (chosen_rewards[i] > rejected_rewards[i]) accurate += 1;
  }
  step.loss /= double(b);
  step.metrics = {
      {"rewards/chosen", mean(chosen_rewards)},     {"rewards/rejected", mean(rejected_rewards)},
      {"rewards/accuracies", accurate / double(b)}, {"rewards/margins", mean(margins)},
      {"logps/chosen", mean(policy_chosen)},        {"logps/rejected", mean(policy_rejected)}};
  return step;
}

double kto_reference_point(std::span<const double> policy_kl, std::span<const double> ref_kl) {
  const std::size_t b = policy_kl.size();
  require_sizes(b, {ref_kl.size()}, "kto");
  double kl_sum = 0;
  for (std::size_t i = 0; i < b; ++i) kl_sum += policy_kl[i] - ref_kl[i];
  return std::fmax(kl_sum / double(b), 0.0);
}

PreferenceStep kto_step(std::span<const double> policy, std::span<const double> ref,
                        std::span<const uint8_t> desirable, std::span<const double> policy_kl,
                        std::span<const double> ref_kl, const KtoOptions& options) {
  require_sizes(policy.size(), {policy_kl.size()}, "kto");
  return kto_step_at(policy, ref, desirable, kto_reference_point(policy_kl, ref_kl), options);
}

PreferenceStep kto_step_at(std::span<const double> policy, std::span<const double> ref,
                           std::span<const uint8_t> desirable, double kl,
                           const KtoOptions& options) {
  const std::size_t b = policy.size();
  require_sizes(b, {ref.size(), desirable.size()}, "kto");
  if (!(options.beta > 0)) throw std::invalid_argument("kto: beta must be above 0");
  if (!(options.desirable_weight >= 0 && options.undesirable_weight >= 0))
    throw std::invalid_argument("kto: the desirable and undesirable weights must not be negative");
  const double beta = options.beta;

  PreferenceStep step;
  step.row_coefficients.assign(2 * b, 0.0);
  double reward_sum[2] = {0, 0}, logp_sum[2] = {0, 0};
  std::size_t count[2] = {0, 0};  // [undesirable, desirable]
  for (std::size_t i = 0; i < b; ++i) {
    const bool good = desirable[i] != 0;
    const double ratio = policy[i] - ref[i];
    const double sign = good ? 1.0 : -1.0;
    const double weight = good ? options.desirable_weight : options.undesirable_weight;
    // Desirable: 1 − σ(β(r − kl)); undesirable: 1 − σ(β(kl − r)), i.e. x = sign · β(r − kl).
    const double x = sign * beta * (ratio - kl);
    const double s = sigmoid(x);
    step.loss += weight * (1 - s);
    // d(1 − σ(x))/dr = −σ(x)σ(−x) · sign · β; kl is detached.
    step.row_coefficients[i] = -weight * s * sigmoid(-x) * sign * beta / double(b);
    reward_sum[good] += beta * ratio;
    logp_sum[good] += policy[i];
    ++count[good];
  }
  step.loss /= double(b);
  step.metrics.emplace_back("kl", kl);
  if (count[1]) {
    step.metrics.emplace_back("rewards/chosen", reward_sum[1] / double(count[1]));
    step.metrics.emplace_back("logps/chosen", logp_sum[1] / double(count[1]));
  }
  if (count[0]) {
    step.metrics.emplace_back("rewards/rejected", reward_sum[0] / double(count[0]));
    step.metrics.emplace_back("logps/rejected", logp_sum[0] / double(count[0]));
  }
  if (count[0] && count[1])
    step.metrics.emplace_back("rewards/margins",
                              reward_sum[1] / double(count[1]) - reward_sum[0] / double(count[0]));
  return step;
}

}  // namespace remat
