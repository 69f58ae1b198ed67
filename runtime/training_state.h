// Training that survives being stopped: everything a later process needs to continue a run so
// that its results are bit-identical to a run never stopped. A state is a folder (written whole
// or not at all, base/atomic_folder.h) holding
//
//   state.json             the format, the optimizer step, the session's configuration (model,
//                          shape, dropout, accumulation, seed, policy, AdamW, learning-rate
//                          schedule), what the run read (files with size and FNV-1a 64 hash) and
//                          the app's own settings, and the hash of each tensor file below
//   params.safetensors     the plan's trainable parameters, F32, under the plan's tensor names
//   optimizer.safetensors  AdamW's moments: "<param>.exp_avg" and "<param>.exp_avg_sq"
//
// docs/training-state.md is the format's reference. The state is written in terms of the plan's
// trainable parameters (Plan::parameters, adam_m, adam_v), whatever the model family. Gradients are
// not saved: every step's first contribution overwrites them. The data position and the dropout
// masks are pure functions of the step count, so restoring the count restores both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "formats/training_state_json.h"
#include "runtime/session.h"

namespace remat {

// The configuration a session continuing `state` is created with (no progress, no costs).
SessionConfig session_config_of(const TrainingState& state);

// Reads and checks `dir`/state.json (format, every field, both tensor files present); the
// tensors themselves are checked by load_training_state. std::invalid_argument, one line naming
// the file and what is wrong, for a missing, damaged or newer-format state.
TrainingState read_training_state(const std::filesystem::path& dir);

// Writes the session's state into `dir`, replacing a previous state there atomically; `dir` must
// be new, empty or hold a state. Progress phase "save" (bytes of tensors written); Cancelled or
// failed, `dir` is as it was.
void save_training_state(const Session& session, const std::filesystem::path& dir,
                         const RunRecord& run);

// Restores parameters, AdamW moments and the step count from `dir`. The state must describe this
// session's run: the same model, trainable parameters (names and shapes), batch, sequence,
// dropout, accumulation and seed, else std::invalid_argument naming the first difference; the
// session's own policy, arena, AdamW settings and schedule are kept (results do not depend on the
// policy). Every tensor is read, hashed and checked before the first byte is uploaded, so a
// damaged state leaves the session as it was; a failure during the upload leaves it as a fresh
// session. Progress phase "load" (tensor bytes checked, then uploaded). Returns the state read.
TrainingState load_training_state(Session& session, const std::filesystem::path& dir);

}  // namespace remat
