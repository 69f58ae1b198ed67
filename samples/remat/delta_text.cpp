#include "delta_text.h"

#include "cli_args.h"
#include "planner/plan.h"

namespace remat::cli {

std::string delta_rule_line(const Session& session) {
  if (!session.config().model.qwen35) return "";
  const int chunk = session.config().shape.delta_chunk;
  if (chunk <= 0) return "delta    rule in one chunk of the whole sequence\n";
  return "delta    rule in chunks of " + std::to_string(chunk) + " tokens (" +
         format_bytes(session.plan().report.delta_state_bytes) + " of chunk-start states)\n";
}

}  // namespace remat::cli
