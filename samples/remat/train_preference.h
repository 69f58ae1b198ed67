// `remat train --objective dpo|kto`: preference tuning on TRL's dataset formats
// (formats/preference_rows.h) through runtime/preference_session.h: the reference log-probs
// computed once at the start, then each step's loss and TRL's metrics, in text and --log-json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "formats/preference_rows.h"
#include "formats/training_state_json.h"
#include "graph/preference_loss.h"
#include "runtime/preference_session.h"

namespace remat::cli {

struct TrainOptions;

// --objective and its options; objective empty for SFT.
struct PreferenceOptions {
  std::optional<PreferenceObjective> objective;
  DpoOptions dpo;
  KtoOptions kto;
  PreferenceConfig config() const;
};

std::vector<FlagSpec> preference_flags();
// UsageError for a bad value, or an option of the other objective (or of none).
PreferenceOptions parse_preference_options(const Args& args);

// The run's objective and options in a training state's settings, and its reference log-probs
// (each double as its exact hexadecimal form, so a resumed run reads back the same bits).
void record_preference(RunRecord& run, const PreferenceOptions& p);
void record_reference(RunRecord& run, const ReferenceLogProbs& reference);
ReferenceLogProbs reference_of(const RunRecord& run);
// The flags a resumed preference run takes from its state: --objective and its options, and
// --batch in examples (the state's shape counts rows: two per example).
void add_preference_arguments(const Args& given, std::vector<std::string>& argv,
                              const TrainingState& state);

int run_train_preference(const TrainOptions& o);

}  // namespace remat::cli
