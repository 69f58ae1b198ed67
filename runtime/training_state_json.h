// state.json of a training state (runtime/training_state.h): the text written and the checks
// made when it is read back. Pure C++; docs/training-state.md lists every field.
#pragma once

#include <string>
#include <string_view>

namespace remat {

struct TrainingState;

// The JSON text of `state`, pretty-printed, ending in a newline.
std::string training_state_json(const TrainingState& state);

// Parses `text`; `origin` names the file in errors. Every field must be present with its type
// and a value in range (std::invalid_argument "<origin>: <what is wrong>"); a format newer than
// kTrainingStateFormat is refused as such. The model and shape are validated as a session would.
TrainingState parse_training_state(std::string_view text, const std::string& origin);

}  // namespace remat
