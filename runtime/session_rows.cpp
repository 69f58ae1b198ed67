// Session: objectives over whole rows' log-probs (a preference objective such as DPO or KTO,
// graph/preference_loss.h). The step runs in two parts around the host: the forward pass to
// the losses, read back and summed per row; the host's coefficients written as per-row loss
// scales; then the recorded backward reads them (Plan::row_loss_scales) and AdamW steps.
#include <cstring>
#include <stdexcept>

#include "base/ignore_target.h"
#include "runtime/session.h"

namespace remat {

namespace {

// Tokens and targets inside the vocabulary (a target may be kIgnoreTarget).
void check_vocabulary(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                      int vocabulary) {
  const auto vocab = static_cast<uint32_t>(vocabulary);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab || (targets[i] >= vocab && targets[i] != kIgnoreTarget))
      throw std::invalid_argument(
          "token " + std::to_string(tokens[i] >= vocab ? tokens[i] : targets[i]) + " at position " +
          std::to_string(i) + " is outside the vocabulary of " + std::to_string(vocab));
}

}  // namespace

void Session::record_rows(const ExecutorOptions& io, const ExecutorOptions& norm_out) {
  const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
  const LoweringExtras extras = lowering_extras();
  using Phases = LoweringPart::Phases;
  std::vector<std::vector<Dispatch>> parts;
  parts.push_back(lower_plan(plan_, quirks_, slices, extras, {Phases::forward, false}));
  parts.push_back(lower_plan(plan_, quirks_, slices, extras, {Phases::backward, false}));
  if (config_.accum > 1)
    parts.push_back(lower_plan(plan_, quirks_, slices, extras, {Phases::backward, true}));
  parts.push_back(lower_plan(plan_, quirks_, slices, extras, {Phases::optimizer, false}));
  std::vector<KernelKey> keys;
  for (const auto& part : parts)
    for (const Dispatch& d : part) keys.emplace_back(d.kernel, d.spec);
  kernels_->build(keys, config_.progress);
  ExecutorOptions timed;
  timed.timestamps = config_.timestamps;
  executor_ = std::make_unique<Executor>(*kernels_, std::move(parts.front()), io);
  backward_ = std::make_unique<Executor>(*kernels_, std::move(parts[1]), timed);
  if (config_.accum > 1)
    backward_accumulate_ = std::make_unique<Executor>(*kernels_, std::move(parts[2]), timed);
  optimizer_ = std::make_unique<Executor>(*kernels_, std::move(parts.back()), norm_out);
}

std::vector<double> Session::read_row_log_probs() const {
  const auto B = static_cast<std::size_t>(config_.shape.batch);
  const auto T = static_cast<std::size_t>(config_.shape.seq);
  const auto* losses = reinterpret_cast<const float*>(static_cast<const uint8_t*>(io_->mapped()) +
                                                      extras_.io_losses_offset);
  std::vector<double> log_probs(B);
  for (std::size_t r = 0; r < B; ++r) {
    double sum = 0;  // in position order, in double: the same sum every run
    for (std::size_t t = 0; t < T; ++t) sum += losses[r * T + t];
    log_probs[r] = -sum;  // ignored positions' losses are 0
  }
  return log_probs;
}

void Session::step_rows(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                        const RowCoefficients& coefficients) {
  if (!plan_.row_loss_scales)
    throw std::invalid_argument(
        "an objective over rows needs a session created with per-row loss scales");
  const auto B = static_cast<std::size_t>(config_.shape.batch);
  const auto T = static_cast<std::size_t>(config_.shape.seq);
  const std::size_t n = B * T;
  const std::size_t micro = static_cast<std::size_t>(std::max(config_.accum, 1));
  if (tokens.size() != n * micro || targets.size() != n * micro)
    throw std::invalid_argument(
        "a step takes " + std::to_string(n * micro) + " tokens and targets (accum " +
        std::to_string(micro) + " × batch " + std::to_string(B) + " × seq " + std::to_string(T) +
        "), got " + std::to_string(tokens.size()) + " and " + std::to_string(targets.size()));
  check_vocabulary(tokens, targets, config_.model.vocab);
  push::AdamWHyper hyper = step_hyper();
  auto* io = static_cast<uint8_t*>(io_->mapped());
  auto* scales =
      reinterpret_cast<float*>(static_cast<uint8_t*>(hyper_->mapped()) + extras_.row_scales_offset);
  for (std::size_t m = 0; m < micro; ++m) {
    // Dropout's masks are keyed as step() keys them; the backward's recomputes see the same.
    hyper.step = static_cast<uint32_t>(steps_done_ * micro + m + 1);
    std::memcpy(hyper_->mapped(), &hyper, sizeof hyper);
    std::memcpy(io, tokens.data() + m * n, n * 4);
    std::memcpy(io + n * 4, targets.data() + m * n, n * 4);
    executor_->run();
    const std::vector<double> log_probs = read_row_log_probs();
    const std::vector<double> c = coefficients(m, log_probs);
    if (c.size() != B)
      throw std::logic_error("step_rows: " + std::to_string(c.size()) + " coefficients for " +
                             std::to_string(B) + " rows");
    // d(objective)/d(loss of token t of row r) = -c[r]: the loss is minus the log-prob.
    for (std::size_t r = 0; r < B; ++r)
      for (std::size_t t = 0; t < T; ++t) scales[r * T + t] = static_cast<float>(-c[r]);
    (m == 0 ? backward_ : backward_accumulate_)->run();
  }
  optimizer_->run();
  ++steps_done_;
}

std::vector<double> Session::row_log_probs(std::span<const uint32_t> tokens,
                                           std::span<const uint32_t> targets) {
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * config_.shape.seq;
  if (tokens.size() != n || targets.size() != n)
    throw std::invalid_argument(
        "row log-probs take " + std::to_string(n) + " tokens and targets (batch × seq), got " +
        std::to_string(tokens.size()) + " and " + std::to_string(targets.size()));
  check_vocabulary(tokens, targets, config_.model.vocab);
  if (plan_.positions != kNoTensor)
    throw std::invalid_argument("row log-probs need rows of one example each (not packed)");
  ensure_evaluator();
  auto* io = static_cast<uint8_t*>(io_->mapped());
  std::memcpy(io, tokens.data(), n * 4);
  std::memcpy(io + n * 4, targets.data(), n * 4);
  evaluator_->run();
  return read_row_log_probs();
}

std::vector<const Executor*> Session::executors() const {
  std::vector<const Executor*> out;
  for (const Executor* e : {executor_.get(), backward_.get(), backward_accumulate_.get(),
                            accumulate_.get(), optimizer_.get()})
    if (e) out.push_back(e);
  return out;
}

}  // namespace remat
