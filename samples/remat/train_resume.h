// `remat train --resume DIR`: a training state (runtime/training_state.h) turned back into the
// run's settings, and the refusal of flags that would make the continued run another run.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "graph/lora.h"
#include "runtime/session.h"
#include "runtime/training_state.h"
#include "train_data.h"

namespace remat::cli {

struct Resumed {
  std::filesystem::path dir;
  TrainingState state;
};

// Reads DIR's state; a missing or damaged state is a UsageError naming the file.
Resumed read_resumed(const std::filesystem::path& dir);

// `argv` (parsed as `given`) plus, for every setting of the run the user left out, the flag that
// gives the state's value: shape, accumulation, seed, AdamW, schedule, data, tokenizer, initial
// weights, data format, chat template, shuffle seed, --steps and the arena or policy. The model is
// not among them: the caller takes it from the state as a base, since not every model field has a
// flag.
std::vector<std::string> arguments_of_state(const Args& given, std::vector<std::string> argv,
                                            const TrainingState& state);

// What `remat train` records about its run: the data, tokenizer, chat template and
// initial-weights files (size and hash, under absolute paths), the data format and the shuffle
// seed. A resumed run carries the state's initial weights forward.
RunRecord training_run_record(const std::filesystem::path& data,
                              const std::optional<std::string>& tokenizer,
                              const std::optional<std::filesystem::path>& init,
                              const std::string& data_format, const JsonlOptions& jsonl,
                              const Resumed* resumed);

// UsageError naming the first flag whose value differs from the state's (or the data or
// tokenizer file whose contents do), and a --steps not beyond the state's step. The arena and
// policy may differ: they change memory and time, never results.
// Records the LoRA settings (rank, alpha, targets, and the frozen weights' dtype when not f32)
// in `run`, so a resumed run rebuilds the same adapters on the same base; nothing when LoRA is
// off.
void record_lora(RunRecord& run, const LoraSpec& spec, const ModelConfig& model, DType weights);

// Records --memory's cap in bytes (nothing without it), so that a resumed run that gives neither
// --arena, --policy nor --memory plans under the same cap.
void record_memory(RunRecord& run, std::optional<uint64_t> memory_bytes);

void require_same_run(const Resumed& resumed, const SessionConfig& config, int steps,
                      const RunRecord& run);

// Packed rows: where packing stands when a state is saved, the next row to read and its pass
// over the examples ("pack_next_row", "pack_pass"). Rows are a function of their index, so a
// resumed run reads on from its step count; the record lets it check that it does.
void record_pack_position(RunRecord& run, const ExampleRows& rows, uint64_t next_row);
// Throws UsageError when the state records another next row than `next_row`.
void require_pack_position(const Resumed& resumed, uint64_t next_row);

}  // namespace remat::cli
