#include "step_timing.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

namespace remat::cli {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void synthetic_batch(const ModelConfig& model, const TrainShape& shape, int accum,
                     std::vector<uint32_t>& tokens, std::vector<uint32_t>& targets) {
  const std::size_t rows = static_cast<std::size_t>(shape.batch) * static_cast<std::size_t>(accum);
  const auto T = static_cast<std::size_t>(shape.seq);
  tokens.assign(rows * T, 0);
  targets.assign(rows * T, 0);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((state >> 33) % static_cast<uint64_t>(model.vocab));
  };
  for (std::size_t r = 0; r < rows; ++r) {
    uint32_t cur = next();
    for (std::size_t t = 0; t < T; ++t) {
      const uint32_t nxt = next();
      tokens[r * T + t] = cur;
      targets[r * T + t] = nxt;
      cur = nxt;
    }
  }
}

namespace {

// Sums one run's dispatch timings per plan step, by the step index each dispatch carries: one
// entry per step that ran, in schedule order; under gradient accumulation a step's passes over
// every micro-batch add up.
std::vector<StepTime> attribute(const Plan& plan, const std::vector<Session::DispatchTime>& ms) {
  std::vector<StepTime> by_step(plan.steps.size());
  for (const auto& d : ms) {
    if (d.step < 0 || static_cast<std::size_t>(d.step) >= plan.steps.size())
      throw std::logic_error("dispatch '" + d.label + "' carries no plan step");
    StepTime& st = by_step[static_cast<std::size_t>(d.step)];
    if (st.dispatches == 0) {
      st.index = d.step;
      st.step = &plan.steps[static_cast<std::size_t>(d.step)];
      st.kind = st.step->kind;
      st.label = d.label;
    }
    st.ms += d.ms;
    ++st.dispatches;
  }
  std::erase_if(by_step, [](const StepTime& st) { return st.dispatches == 0; });
  return by_step;
}

// Sums one run's dispatch timings per shader.
std::map<std::string, KernelTime> by_kernel(const std::vector<Session::DispatchTime>& ms) {
  std::map<std::string, KernelTime> out;
  for (const auto& d : ms) {
    KernelTime& k = out[d.kernel];
    k.kernel = d.kernel;
    k.ms += d.ms;
    ++k.dispatches;
  }
  return out;
}

// Each dispatch's fastest time over the runs (every run records the same dispatches).
std::vector<Session::DispatchTime> fastest(
    const std::vector<std::vector<Session::DispatchTime>>& runs) {
  std::vector<Session::DispatchTime> out =
      runs.empty() ? std::vector<Session::DispatchTime>{} : runs.front();
  for (const auto& r : runs)
    for (std::size_t i = 0; i < out.size() && i < r.size(); ++i)
      out[i].ms = std::min(out[i].ms, r[i].ms);
  return out;
}

// Each shader's median over the runs (a run the shader is missing from counts 0 ms), and the sum
// of its dispatches' fastest times.
std::vector<KernelTime> median_kernels(
    const std::vector<std::vector<Session::DispatchTime>>& runs) {
  std::vector<KernelTime> out;
  if (runs.empty()) return out;
  std::vector<std::map<std::string, KernelTime>> per_run;
  for (const auto& r : runs) per_run.push_back(by_kernel(r));
  const auto best = by_kernel(fastest(runs));
  for (const auto& [name, first] : per_run.front()) {
    std::vector<double> v;
    for (const auto& r : per_run) {
      const auto it = r.find(name);
      v.push_back(it == r.end() ? 0.0 : it->second.ms);
    }
    out.push_back({name, first.dispatches, median(v), best.at(name).ms});
  }
  std::sort(out.begin(), out.end(),
            [](const KernelTime& a, const KernelTime& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace

Measurement measure_session(Session& session, int warmup, int steps) {
  if (!session.config().timestamps)
    throw std::logic_error("measure_session needs a session with timestamps on");
  std::vector<uint32_t> tokens, targets;
  synthetic_batch(session.config().model, session.config().shape, session.config().accum, tokens,
                  targets);
  for (int i = 0; i < warmup; ++i) session.step(tokens, targets);
  Measurement m;
  std::vector<std::vector<StepTime>> runs;
  std::vector<std::vector<Session::DispatchTime>> kernel_runs;
  std::vector<double> host;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    session.step(tokens, targets);
    const double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto ms = session.dispatch_ms();
    double gpu = 0;
    for (const auto& d : ms) gpu += d.ms;
    m.wall_ms.push_back(wall);
    m.gpu_ms.push_back(gpu);
    host.push_back(wall - gpu);
    runs.push_back(attribute(session.plan(), ms));
    kernel_runs.push_back(ms);
  }
  m.median_wall_ms = median(m.wall_ms);
  m.median_gpu_ms = median(m.gpu_ms);
  m.median_host_ms = median(host);
  m.kernels = median_kernels(kernel_runs);
  if (!runs.empty()) {
    m.steps = runs.front();
    for (std::size_t s = 0; s < m.steps.size(); ++s) {
      std::vector<double> v;
      for (const auto& r : runs)
        if (s < r.size()) v.push_back(r[s].ms);
      m.steps[s].ms = median(v);
      if (m.steps[s].step && m.steps[s].step->phase == Phase::forward)
        m.forward_gpu_ms += m.steps[s].ms;
    }
  }
  return m;
}

}  // namespace remat::cli
