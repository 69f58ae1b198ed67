// Flags that name the data a step reads, shared by `remat train` and `remat plan`: the file, how
// it is read (tokenizer, format), and for JSONL examples the chat template, shuffle and packing.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "train_data.h"

namespace remat::cli {

// --data --tokenizer --data-format --chat-template --shuffle --pack, declared once; `data_help`
// says what --data is for in the command.
std::vector<FlagSpec> data_flags(const std::string& data_help);

struct DataOptions {
  std::optional<std::filesystem::path> data;  // --data
  std::optional<std::string> tokenizer;       // --tokenizer, or a .gguf init's
  std::string format = "auto";                // --data-format
  JsonlOptions jsonl;                         // --chat-template --shuffle --pack
};

// A .gguf `init` that carries a tokenizer reads the data unless --tokenizer is given (or the
// format is bytes). A flag that reads data without --data is a UsageError; whether the rest fit
// the file (--pack on text) is load_training_data's to say.
DataOptions parse_data_flags(const Args& args, const std::optional<std::filesystem::path>& init);

}  // namespace remat::cli
