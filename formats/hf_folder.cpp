#include "formats/hf_folder.h"

#include <stdexcept>
#include <string>

#include "base/json_file.h"
#include "formats/gguf_model.h"
#include "formats/gpt2_weights.h"
#include "formats/hf_config.h"
#include "formats/model_metadata.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"

namespace remat {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw std::invalid_argument(path.string() + ": " + what);
}

ModelConfig folder_model(const fs::path& dir) {
  const fs::path file = dir / kHfConfigFile;
  std::error_code ec;
  if (!fs::exists(file, ec))
    fail(dir, std::string("is a folder without ") + kHfConfigFile +
                  "; give a .safetensors file or a Hugging Face model folder (config.json with " +
                  kHfWeightsFile + " or " + kHfWeightsIndex + ")");
  const JsonValue config = read_json_file(file);
  try {
    return model_config_from_hf(config);
  } catch (const std::invalid_argument& e) {
    fail(file, e.what());
  }
}

}  // namespace

ModelConfig checkpoint_model(const fs::path& path, std::optional<int> heads) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return folder_model(path);
  if (names_gguf_file(path)) return gguf_model_config(GgufFile::open(path));
  if (path.filename().string().ends_with(".index.json"))
    return folder_model(path.has_parent_path() ? path.parent_path() : fs::path("."));
  const SafetensorsSource file = SafetensorsSource::open(path);
  try {
    return safetensors_model(file.header(), heads);
  } catch (const std::invalid_argument& e) {
    fail(path, e.what());
  }
}

bool names_safetensors_file(const fs::path& path) {
  return path.filename().string().ends_with(".safetensors");
}

}  // namespace remat
