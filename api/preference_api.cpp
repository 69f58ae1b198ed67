// The C API's preference tuning (remat.h, "Since 0.5, preference tuning") over
// runtime/preference_session.h: row log-probs for the reference, and a step on rows the app
// built, with the reference log-probs it kept.
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "api/error_boundary.h"
#include "api/handles.h"
#include "runtime/preference_session.h"

using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

namespace {

remat::Session& preference_session_of(const remat_session* s) {
  require(s != nullptr, "session is NULL");
  if (!s->session->plan().row_loss_scales)
    invalid("the session was created without params->preference");
  return *s->session;
}

template <typename T>
std::span<const T> span_of(const T* data, size_t count, const char* name) {
  if (count > 0 && data == nullptr) invalid(std::string(name) + " is NULL");
  return {data, count};
}

remat::PreferenceConfig config_of(const remat_preference_options* o) {
  require(o != nullptr, "options is NULL");
  remat::capi::require_struct(o, "options");
  remat::PreferenceConfig c;
  if (o->objective == REMAT_OBJECTIVE_DPO)
    c.objective = remat::PreferenceObjective::dpo;
  else if (o->objective == REMAT_OBJECTIVE_KTO)
    c.objective = remat::PreferenceObjective::kto;
  else
    invalid("options->objective is " + std::to_string(o->objective) +
            ", not REMAT_OBJECTIVE_DPO (1) or REMAT_OBJECTIVE_KTO (2)");
  c.dpo = {o->beta, o->label_smoothing};
  c.kto = {o->beta, o->desirable_weight, o->undesirable_weight};
  return c;
}

void fill_metrics(remat_preference_metrics& m, const remat::PreferenceStep& p) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  auto get = [&](const char* name) {
    for (const auto& [n, v] : p.metrics)
      if (n == name) return v;
    return none;
  };
  m.loss = p.loss;
  m.rewards_chosen = get("rewards/chosen");
  m.rewards_rejected = get("rewards/rejected");
  m.rewards_accuracies = get("rewards/accuracies");
  m.rewards_margins = get("rewards/margins");
  m.logps_chosen = get("logps/chosen");
  m.logps_rejected = get("logps/rejected");
  m.kl = get("kl");
}

}  // namespace

extern "C" {

remat_preference_options remat_preference_options_default(void) {
  remat_preference_options o{};
  o.struct_size = sizeof o;
  o.objective = REMAT_OBJECTIVE_DPO;
  const remat::DpoOptions dpo;
  const remat::KtoOptions kto;
  o.beta = dpo.beta;
  o.label_smoothing = dpo.label_smoothing;
  o.desirable_weight = kto.desirable_weight;
  o.undesirable_weight = kto.undesirable_weight;
  return o;
}

remat_status remat_session_log_probs(remat_session* session, const uint32_t* tokens,
                                     const uint32_t* targets, size_t count, double* out,
                                     size_t out_count) {
  return guarded([&] {
    remat::Session& s = preference_session_of(session);
    const auto seq = static_cast<size_t>(s.config().shape.seq);
    remat::Batch rows;
    const auto in = span_of(tokens, count, "tokens");
    const auto tg = span_of(targets, count, "targets");
    rows.tokens.assign(in.begin(), in.end());
    rows.targets.assign(tg.begin(), tg.end());
    require(out != nullptr || out_count == 0, "out is NULL");
    if (out_count != count / seq)
      invalid("out holds " + std::to_string(out_count) + " log-probs; " + std::to_string(count) +
              " tokens are " + std::to_string(count / seq) + " rows");
    const std::lock_guard lock(session->device->mutex);
    const std::vector<double> lp = remat::rows_log_probs(s, rows);
    std::copy(lp.begin(), lp.end(), out);
  });
}

remat_status remat_session_step_preference(
    remat_session* session, const remat_preference_options* options, const uint32_t* tokens,
    const uint32_t* targets, size_t count, const double* reference, size_t reference_count,
    const uint8_t* desirable, size_t desirable_count, remat_preference_metrics* metrics) {
  return guarded([&] {
    remat::Session& s = preference_session_of(session);
    const remat::PreferenceConfig c = config_of(options);
    if (metrics) remat::capi::require_struct(metrics, "metrics");
    remat::Batch rows;
    const auto in = span_of(tokens, count, "tokens");
    const auto tg = span_of(targets, count, "targets");
    rows.tokens.assign(in.begin(), in.end());
    rows.targets.assign(tg.begin(), tg.end());
    const auto ref = span_of(reference, reference_count, "reference");
    for (double r : ref)
      if (!std::isfinite(r)) invalid("reference holds a log-prob that is not finite");
    const auto labels = span_of(desirable, desirable_count, "desirable");
    if (c.objective == remat::PreferenceObjective::dpo && !labels.empty())
      invalid("desirable labels are KTO's; DPO takes none (NULL, 0)");
    const std::lock_guard lock(session->device->mutex);
    const remat::PreferenceStep p = remat::preference_step(s, c, rows, ref, labels);
    if (metrics) fill_metrics(*metrics, p);
  });
}

}  // extern "C"
