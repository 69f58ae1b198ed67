#include "formats/weight_files.h"

#include <cctype>
#include <map>
#include <stdexcept>

#include "base/json_file.h"

namespace remat {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw std::invalid_argument(file.string() + ": " + what);
}

// weight_map of an index: tensor name -> shard file name. Shards must lie in the index's folder.
std::map<std::string, std::string> weight_map(const fs::path& index) {
  const JsonValue doc = read_json_file(index);
  const JsonValue* map = doc.find("weight_map");
  if (!map || map->type != JsonValue::Type::object)
    fail(index, "has no \"weight_map\" object (tensor name -> shard file)");
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : map->object) {
    if (file.type != JsonValue::Type::string || file.string.empty() ||
        file.string.find('/') != std::string::npos || file.string == "." || file.string == "..")
      fail(index,
           "weight_map maps '" + name + "' to something other than a file name in its folder");
    out.emplace(name, file.string);
  }
  if (out.empty()) fail(index, "weight_map is empty");
  return out;
}

}  // namespace

bool names_gguf_file(const fs::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".gguf";
}

WeightFiles WeightFiles::single(SafetensorsSource source) {
  WeightFiles w;
  w.origin_ = source.origin();
  w.header_.metadata = source.header().metadata;
  w.add(std::move(source));
  return w;
}

WeightFiles WeightFiles::gguf(GgufFile file) {
  WeightFiles w;
  w.origin_ = file.origin();
  auto weights = std::make_shared<GgufWeights>(std::move(file));
  w.header_ = weights->header();
  w.gguf_ = std::move(weights);
  return w;
}

WeightFiles WeightFiles::open(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    const std::string name = path.filename().string();
    if (names_gguf_file(path)) return gguf(GgufFile::open(path));
    const std::string suffix = ".index.json";
    if (name.size() > suffix.size() && name.ends_with(suffix)) return sharded(path);
    return single(SafetensorsSource::open(path));
  }
  if (fs::exists(path / kHfWeightsFile, ec))
    return single(SafetensorsSource::open(path / kHfWeightsFile));
  if (fs::exists(path / kHfWeightsIndex, ec)) return sharded(path / kHfWeightsIndex);
  fail(path, std::string("is a folder without ") + kHfWeightsFile + " or " + kHfWeightsIndex);
}

WeightFiles WeightFiles::sharded(const fs::path& index) {
  const std::map<std::string, std::string> map = weight_map(index);
  WeightFiles w;
  w.origin_ = index.string();
  std::map<std::string, std::size_t> shards;  // file name -> its position in files_
  for (const auto& [name, file] : map) shards.emplace(file, 0);
  for (auto& [file, position] : shards) {
    position = w.files_.size();
    w.add(SafetensorsSource::open(index.parent_path() / file));
  }
  // Both directions: every mapped tensor is in its file, and every tensor of a file is mapped
  // there (a shard holding a tensor twice over, or one the index forgot, is not loaded silently).
  std::map<std::string, std::size_t> found;
  for (std::size_t i = 0; i < w.header_.tensors.size(); ++i) {
    const std::string& name = w.header_.tensors[i].name;
    const std::string& file = w.files_[w.file_of_[i]].origin();
    const auto it = map.find(name);
    if (it == map.end() || shards.at(it->second) != w.file_of_[i])
      fail(index, "tensor '" + name + "' is in " + file + " but weight_map " +
                      (it == map.end() ? "does not list it" : "maps it to " + it->second));
    found.emplace(name, i);
  }
  for (const auto& [name, file] : map)
    if (!found.count(name))
      fail(index, "weight_map maps '" + name + "' to " + file + ", which has no such tensor");
  return w;
}

void WeightFiles::add(SafetensorsSource source) {
  for (const SafetensorsEntry& t : source.header().tensors) {
    header_.tensors.push_back(t);
    file_of_.push_back(files_.size());
  }
  files_.push_back(std::move(source));
}

void WeightFiles::read_blocks(const SafetensorsEntry& t, uint64_t offset,
                              std::span<std::byte> out) const {
  const SafetensorsEntry* begin = header_.tensors.data();
  if (!gguf_ || &t < begin || &t >= begin + header_.tensors.size())
    throw std::logic_error("WeightFiles::read_blocks: '" + t.name + "' has no blocks in " +
                           origin_);
  gguf_->read_blocks(gguf_->header().tensors[static_cast<std::size_t>(&t - begin)], offset, out);
}

void WeightFiles::read(const SafetensorsEntry& t, uint64_t first, std::span<float> out) const {
  const SafetensorsEntry* begin = header_.tensors.data();
  if (gguf_) {
    // header_ is a copy of the GGUF header: the same position there.
    if (&t < begin || &t >= begin + header_.tensors.size())
      throw std::logic_error("WeightFiles::read: '" + t.name + "' is not a tensor of " + origin_);
    return gguf_->read(gguf_->header().tensors[static_cast<std::size_t>(&t - begin)], first, out);
  }
  if (&t < begin || &t >= begin + header_.tensors.size())
    throw std::logic_error("WeightFiles::read: '" + t.name + "' is not a tensor of " + origin_);
  files_[file_of_[static_cast<std::size_t>(&t - begin)]].read(t, first, out);
}

}  // namespace remat
