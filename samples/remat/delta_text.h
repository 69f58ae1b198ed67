// The delta rule's chunk as `remat train` prints it, for SFT and preference runs alike: which
// chunk length the session runs Qwen3.5's recurrence in (docs/DESIGN.md, "The delta rule under
// the planner").
#pragma once

#include <string>

#include "runtime/session.h"

namespace remat::cli {

// "delta    rule in chunks of 8 tokens (1.00 KiB of chunk-start states)\n", or "... in one chunk
// of the whole sequence\n"; "" for a model without Gated DeltaNet layers.
std::string delta_rule_line(const Session& session);

}  // namespace remat::cli
