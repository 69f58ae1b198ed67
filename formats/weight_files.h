// A checkpoint's tensors, in one safetensors file or sharded over several. Hugging Face shards a
// large model as model-00001-of-00004.safetensors, ... next to model.safetensors.index.json, whose
// "weight_map" names the file of every tensor. WeightFiles opens every file's header (no data),
// checks that the index and the files agree, and reads any tensor from the file that holds it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "formats/safetensors.h"

namespace remat {

// The index a folder may hold, and the single file it may hold instead.
inline constexpr const char* kHfWeightsFile = "model.safetensors";
inline constexpr const char* kHfWeightsIndex = "model.safetensors.index.json";

// Whether `path` names a GGUF file (by its .gguf extension).
bool names_gguf_file(const std::filesystem::path& path);

class WeightFiles {
 public:
  // `path` is a GGUF file (*.gguf, or any part of a split one), a safetensors file, an index
  // (*.index.json), or a folder holding model.safetensors
  // (used when present, as transformers does) or model.safetensors.index.json. Errors are
  // std::invalid_argument "<file>: <what is wrong>": an unreadable file, an index whose weight_map
  // is not an object of file names in the index's folder, a tensor the index maps to a file that
  // lacks it, a tensor a shard holds that the index does not map to it.
  static WeightFiles open(const std::filesystem::path& path);
  // One file or in-memory image already opened.
  static WeightFiles single(SafetensorsSource source);
  // A GGUF model (formats/gguf_model.h): its tensors under remat's parameter names, decoded.
  static WeightFiles gguf(GgufFile file);

  // Every tensor of every file (header().tensors); data_offset is meaningless here, metadata is
  // the single file's (empty for shards).
  const SafetensorsHeader& header() const { return header_; }
  // The GGUF model behind these weights, or nullptr for safetensors.
  const GgufWeights* gguf() const { return gguf_.get(); }
  // What was opened, for messages: the file, or the index.
  const std::string& origin() const { return origin_; }
  // Elements [first, first + out.size()) of `t`, a tensor of header(), from its file: see
  // SafetensorsSource::read (non-finite values are refused naming that file).
  void read(const SafetensorsEntry& t, uint64_t first, std::span<float> out) const;
  // Bytes [offset, offset + out.size()) of `t`'s blocks (GgufWeights::read_blocks): a GGUF
  // model's block weight only, else std::logic_error.
  void read_blocks(const SafetensorsEntry& t, uint64_t offset, std::span<std::byte> out) const;

 private:
  WeightFiles() = default;
  static WeightFiles sharded(const std::filesystem::path& index);
  void add(SafetensorsSource source);

  std::vector<SafetensorsSource> files_;
  std::shared_ptr<const GgufWeights> gguf_;  // instead of files_ for a GGUF model
  SafetensorsHeader header_;
  std::vector<std::size_t> file_of_;  // header_.tensors[i] is in files_[file_of_[i]]
  std::string origin_;
};

}  // namespace remat
