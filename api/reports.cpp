#include "api/reports.h"

#include <cstddef>
#include <cstring>

#include "api/error_boundary.h"

namespace remat::capi {

void require_plan_report(const remat_plan_report* report) {
  if (report && report->struct_size == offsetof(remat_plan_report, delta_chunk)) return;
  require_struct(report, "report");
}

void fill_plan_report(const Plan& plan, const ModelConfig& model, remat_plan_report& report) {
  remat_plan_report out{report.struct_size};
  out.arena_bytes = plan.arena_bytes;
  out.arena_lower_bound_bytes = plan.arena_lower_bound;
  out.persistent_bytes = plan.persistent_bytes;
  out.total_bytes = plan.arena_bytes + plan.persistent_bytes;
  out.parameter_count = model.parameter_count();
  out.checkpoint_count = static_cast<uint32_t>(plan.report.checkpoints.size());
  out.predicted_step_ratio = plan.report.predicted_step_ratio;
  out.recompute_ratio =
      plan.report.forward_flops > 0 ? plan.report.recompute_flops / plan.report.forward_flops : 0.0;
  copy_text(out.policy, plan.policy.to_string());
  out.delta_chunk = plan.report.delta_chunk;
  std::memcpy(&report, &out, report.struct_size);  // an older struct ends before delta_chunk
}

void fill_memory_report(const MemoryReport& memory, remat_memory_report& out) {
  out = remat_memory_report{sizeof(remat_memory_report)};
  out.persistent_bytes = memory.persistent_bytes;
  out.arena_bytes = memory.arena_bytes;
  for (const auto& extra : memory.extras) out.extra_bytes += extra.second;
  out.planned_total_bytes = memory.planned_total_bytes;
  out.device_allocated_bytes = memory.device_bytes_allocated;
  out.device_peak_bytes = memory.device_peak_bytes;
}

}  // namespace remat::capi
