// Session: running the recorded step on a batch, evaluating without training, sampling tokens.
#include "runtime/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "base/half_float.h"
#include "base/ignore_target.h"
#include "base/row_positions.h"
#include "optimizer_params.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/vulkan/staging.h"

namespace remat {

namespace {

// Checks every token and target against the vocabulary (a target may also be kIgnoreTarget: not
// trained) and returns how many targets are trained. `what` names the call for the refusal of a
// batch that trains nothing, whose mean loss would be 0/0.
std::size_t trained_targets(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                            int vocabulary, const char* what) {
  const auto vocab = static_cast<uint32_t>(vocabulary);
  std::size_t trained = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const bool ignored = targets[i] == kIgnoreTarget;
    if (tokens[i] >= vocab || (targets[i] >= vocab && !ignored))
      throw std::invalid_argument(
          "token " + std::to_string(tokens[i] >= vocab ? tokens[i] : targets[i]) + " at position " +
          std::to_string(i) + " is outside the vocabulary of " + std::to_string(vocab));
    trained += ignored ? 0 : 1;
  }
  if (trained == 0)
    throw std::invalid_argument(std::string(what) + " needs at least one trained target, but all " +
                                std::to_string(targets.size()) +
                                " are the ignored target 0xFFFFFFFF");
  return trained;
}

// Logits [begin, begin + V) of mapped staging holding `dt` values, as floats (16-bit ones widened
// into `widened`).
const float* logits_row(const void* mapped, DType dt, std::size_t begin, std::size_t V,
                        std::vector<float>& widened) {
  if (dt == DType::f32) return static_cast<const float*>(mapped) + begin;
  const uint16_t* h = static_cast<const uint16_t*>(mapped) + begin;
  widened.resize(V);
  for (std::size_t v = 0; v < V; ++v)
    widened[v] = dt == DType::f16 ? f16_to_float(h[v]) : bf16_to_float(h[v]);
  return widened.data();
}

}  // namespace

void Session::check_positions(std::span<const uint32_t> positions, std::size_t tokens) const {
  if (plan_.positions == kNoTensor) {
    if (!positions.empty())
      throw std::invalid_argument(
          "this session's rows hold one example each; position ids need a session created for "
          "packed rows");
    return;
  }
  if (positions.size() != tokens)
    throw std::invalid_argument(
        "packed rows take one position id per token: " + std::to_string(tokens) + " tokens, " +
        std::to_string(positions.size()) + " position ids");
  const std::string why = row_positions_error(positions, config_.shape.seq);
  if (!why.empty()) throw std::invalid_argument("packed rows: " + why);
}

void Session::stage_positions(std::span<const uint32_t> positions, std::size_t m, std::size_t n) {
  if (plan_.positions == kNoTensor) return;
  auto* io = static_cast<uint8_t*>(io_->mapped());
  std::memcpy(io + extras_.io_positions_offset, positions.data() + m * n, n * 4);
}

float Session::step(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                    std::span<const uint32_t> positions) {
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * config_.shape.seq;
  const std::size_t micro = static_cast<std::size_t>(std::max(config_.accum, 1));
  if (tokens.size() != n * micro || targets.size() != n * micro)
    throw std::invalid_argument(
        "a step takes " + std::to_string(n * micro) + " tokens and targets (accum " +
        std::to_string(micro) + " × batch " + std::to_string(config_.shape.batch) + " × seq " +
        std::to_string(config_.shape.seq) + "), got " + std::to_string(tokens.size()) + " and " +
        std::to_string(targets.size()));
  // Counted over all micro-batches before the first runs: the loss is their joint mean.
  const std::size_t trained = trained_targets(tokens, targets, config_.model.vocab, "a step");
  check_positions(positions, tokens.size());
  push::AdamWHyper hyper = step_hyper();
  hyper.loss_scale = 1.0f / static_cast<float>(trained);
  if (plan_.row_loss_scales) {
    // The mean loss as an objective over rows: every row's coefficient is -loss_scale, which
    // the backward reads back as the same float loss_scale (session_rows.cpp).
    if (!positions.empty())
      throw std::invalid_argument("a session with per-row loss scales takes no position ids");
    // The losses summed as below, in position order, while the forward's are in the staging.
    const auto* staged = reinterpret_cast<const float*>(static_cast<const uint8_t*>(io_->mapped()) +
                                                        extras_.io_losses_offset);
    double sum = 0;
    step_rows(tokens, targets, [&](std::size_t, std::span<const double> log_probs) {
      for (std::size_t i = 0; i < n; ++i) sum += staged[i];
      return std::vector<double>(log_probs.size(), -double(hyper.loss_scale));
    });
    return static_cast<float>(sum / double(trained));
  }

  auto* io = static_cast<uint8_t*>(io_->mapped());
  const auto* losses = reinterpret_cast<const float*>(io + extras_.io_losses_offset);
  double sum = 0;  // in position order, in double: the same sum every run
  for (std::size_t m = 0; m < micro; ++m) {
    // Dropout keys its masks by hyper.step (AdamW reads only the bias corrections): every
    // micro-batch gets its own masks, and accum 1 keys step s by s + 1.
    hyper.step = static_cast<uint32_t>(steps_done_ * micro + m + 1);
    std::memcpy(hyper_->mapped(), &hyper, sizeof hyper);
    std::memcpy(io, tokens.data() + m * n, n * 4);
    std::memcpy(io + n * 4, targets.data() + m * n, n * 4);
    stage_positions(positions, m, n);
    (m == 0 ? executor_ : accumulate_)->run();
    for (std::size_t i = 0; i < n; ++i) sum += losses[i];
  }
  if (optimizer_) optimizer_->run();
  ++steps_done_;
  return static_cast<float>(sum / double(trained));  // ignored positions' losses are 0
}

push::AdamWHyper Session::step_hyper() const {
  kernels::AdamWConfig adam;
  adam.lr = learning_rate();
  adam.beta1 = config_.optimizer.beta1;
  adam.beta2 = config_.optimizer.beta2;
  adam.eps = config_.optimizer.eps;
  adam.weight_decay = config_.optimizer.weight_decay;
  return kernels::adamw_hyper(adam, steps_done_ + 1);
}

void Session::ensure_evaluator() {
  if (evaluator_) return;
  // The loss of the model itself, not of a thinned one: dropout scales by 1 and keeps all.
  Plan forward = plan_;
  for (Step& s : forward.steps) s.attrs.dropout_p = 0;
  const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
  ExecutorOptions io;
  io.before = io_inputs();
  const BufferSlice losses = slice_of(plan_.losses);
  io.after = {{losses.buffer, io_->handle(), losses.offset, extras_.io_losses_offset, losses.size}};
  evaluator_ = std::make_unique<Executor>(*kernels_,
                                          lower_plan(forward, quirks_, slices, lowering_extras(),
                                                     {LoweringPart::Phases::forward, false}),
                                          io);
}

void Session::reset_training() {
  initialize_parameters(nullptr);
  zero_optimizer_state();
  steps_done_ = 0;
}

float Session::evaluate(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                        std::span<const uint32_t> positions) {
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * config_.shape.seq;
  if (tokens.size() != n || targets.size() != n)
    throw std::invalid_argument(
        "evaluating takes " + std::to_string(n) + " tokens and targets (batch " +
        std::to_string(config_.shape.batch) + " × seq " + std::to_string(config_.shape.seq) +
        "), got " + std::to_string(tokens.size()) + " and " + std::to_string(targets.size()));
  const std::size_t trained = trained_targets(tokens, targets, config_.model.vocab, "evaluating");
  check_positions(positions, tokens.size());
  ensure_evaluator();
  // The forward pass writes only what a step writes before reading it: the io staging, the
  // activations in the arena and the losses. The previous step's gradient norm stays readable.
  auto* io = static_cast<uint8_t*>(io_->mapped());
  std::memcpy(io, tokens.data(), n * 4);
  std::memcpy(io + n * 4, targets.data(), n * 4);
  stage_positions(positions, 0, n);
  evaluator_->run();
  const auto* losses = reinterpret_cast<const float*>(io + extras_.io_losses_offset);
  double sum = 0;  // in position order, in double, as step() sums
  for (std::size_t i = 0; i < n; ++i) sum += losses[i];
  return static_cast<float>(sum / double(trained));
}

float Session::last_grad_norm() const {
  push::GradNormResult r;
  std::memcpy(&r, static_cast<const uint8_t*>(io_->mapped()) + extras_.io_norm_offset, sizeof r);
  return r.norm;
}

std::vector<uint32_t> Session::sample(std::span<const uint32_t> prompt, int count, uint64_t seed,
                                      float temperature, int top_k) {
  const auto T = static_cast<std::size_t>(config_.shape.seq);
  const auto V = static_cast<std::size_t>(config_.model.vocab);
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * T;
  if (prompt.empty()) throw std::invalid_argument("sampling needs a prompt of at least one token");
  for (uint32_t t : prompt)
    if (t >= V)
      throw std::invalid_argument("prompt token " + std::to_string(t) +
                                  " is outside the vocabulary");
  // A chunked head (TrainShape::loss_chunk) never holds a row's whole logits.
  if (plan_.logits == kNoTensor)
    throw std::invalid_argument("sampling needs the whole logits: use loss chunk 0");
  const PlannedTensor& lt = plan_.tensors.at(static_cast<std::size_t>(plan_.logits));

  // Row 0's logits, [T, V], copied out after the forward pass; freed when sampling ends.
  const DType ldt = lt.tensor.dtype;
  const std::size_t lbytes = T * V * static_cast<std::size_t>(dtype_bytes(ldt));
  Buffer out(device_, lbytes, MemoryCategory::staging, "sample staging", true);
  const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
  const LoweringExtras extras = lowering_extras();
  ExecutorOptions opts;
  const BufferSlice ls = arena_->slice(lt.offset, lt.bytes);
  opts.before = io_inputs();
  opts.after = {{ls.buffer, out.handle(), ls.offset, 0, lbytes}};
  Executor forward(
      *kernels_, lower_plan(plan_, quirks_, slices, extras, {LoweringPart::Phases::forward, false}),
      opts);

  std::vector<uint32_t> context(prompt.begin(), prompt.end()), generated;
  std::vector<float> widened;  // a 16-bit logits row as floats
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto uniform = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return double((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
  };
  auto* io = static_cast<uint32_t*>(io_->mapped());
  if (plan_.positions != kNoTensor)  // packed session: one example in each row
    fill_plain_positions({io + extras_.io_positions_offset / 4, n}, config_.shape.seq);
  for (int g = 0; g < count; ++g) {
    // The model sees the last T tokens; causal attention makes the padding after them irrelevant.
    const std::size_t len = std::min(context.size(), T);
    std::fill(io, io + 2 * n, 0u);
    std::copy(context.end() - static_cast<std::ptrdiff_t>(len), context.end(), io);
    forward.run();
    const float* row = logits_row(out.mapped(), ldt, (len - 1) * V, V, widened);
    std::size_t pick = 0;
    if (temperature <= 0) {
      pick = static_cast<std::size_t>(std::max_element(row, row + V) - row);
    } else {
      const float top = *std::max_element(row, row + V);
      float floor = -INFINITY;  // logits below the k-th largest are never picked
      if (top_k > 0 && std::size_t(top_k) < V) {
        std::vector<float> sorted(row, row + V);
        std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(),
                         std::greater<>());
        floor = sorted[std::size_t(top_k - 1)];
      }
      std::vector<double> p(V);
      double total = 0;
      for (std::size_t v = 0; v < V; ++v)
        total += p[v] = row[v] < floor ? 0.0 : std::exp(double(row[v] - top) / temperature);
      double r = uniform() * total;
      // Zero-probability tokens (outside the top k) are stepped over even when r is 0.
      for (pick = 0; pick + 1 < V && ((r -= p[pick]) > 0 || p[pick] == 0); ++pick) {
      }
    }
    context.push_back(static_cast<uint32_t>(pick));
    generated.push_back(static_cast<uint32_t>(pick));
  }
  return generated;
}

}  // namespace remat
