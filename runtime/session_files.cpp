#include "runtime/session_files.h"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "formats/gpt2_weights.h"
#include "formats/hf_config.h"
#include "formats/hf_folder.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "runtime/session.h"

namespace remat {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw std::invalid_argument(path.string() + ": " + what);
}

}  // namespace

void save_hf_folder(const Session& session, const fs::path& dir) {
  // The config first in memory: a model config.json cannot describe fails before any write.
  const std::string config = hf_config_json(session.config().model);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail(dir, "is a file; give a folder to save the model into, or a path ending in .safetensors");
  fs::create_directory(dir, ec);
  if (ec) fail(dir, "cannot create the folder (" + ec.message() + ")");
  session.save(dir / kHfWeightsFile);
  write_file_atomically(dir / kHfConfigFile, config);
}

void save_checkpoint(const Session& session, const fs::path& path) {
  if (names_safetensors_file(path))
    session.save(path);
  else
    save_hf_folder(session, path);
}

void save_adapter(const Session& session, const std::filesystem::path& dir,
                  const std::string& base_model) {
  const Plan& plan = session.plan();
  if (plan.adapters.empty())
    throw std::invalid_argument("the session trains no LoRA adapters; nothing to save");
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument(dir.string() + ": cannot create the adapter folder" +
                                (ec ? ": " + ec.message() : std::string()));
  const Architecture arch = session.config().model.arch;
  std::vector<TensorSpec> specs;
  for (TensorId id : plan.parameters) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    specs.push_back({peft_key(t.name, arch), t.shape});
  }
  SafetensorsWriter writer(dir / kPeftWeightsFile, specs, {{"format", "pt"}});
  for (TensorId id : plan.parameters) writer.write(session.values(id));
  writer.commit();
  LoraSpec spec = session.config().lora;
  spec.targets = lora_targets(spec, arch);
  write_file_atomically(
      dir / kPeftConfigFile,
      adapter_config_json(spec, plan.adapters.front().fan_in_fan_out, base_model));
}

void load_adapter(Session& session, const std::filesystem::path& dir) {
  const Plan& plan = session.plan();
  if (plan.adapters.empty())
    throw std::invalid_argument("the session trains no LoRA adapters; nothing to load into");
  const std::string origin = dir.string();
  const AdapterConfig config = read_adapter_config(dir);
  const Architecture arch = session.config().model.arch;
  lora_spec_for(config, session.config().lora, arch, origin);
  if (config.fan_in_fan_out != plan.adapters.front().fan_in_fan_out)
    throw std::invalid_argument(origin + ": fan_in_fan_out must be " +
                                (plan.adapters.front().fan_in_fan_out ? "true" : "false") +
                                " for this model's weights");
  const SafetensorsSource source = SafetensorsSource::open(dir / kPeftWeightsFile);
  std::map<std::string, const SafetensorsEntry*> by_key;
  for (const SafetensorsEntry& e : source.header().tensors) by_key[e.name] = &e;
  std::vector<std::vector<float>> values;
  for (TensorId id : plan.parameters) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    const std::string key = peft_key(t.name, arch);
    const auto it = by_key.find(key);
    if (it == by_key.end())
      throw std::invalid_argument(source.origin() + ": no tensor '" + key + "'");
    if (it->second->shape != t.shape)
      throw std::invalid_argument(source.origin() + ": tensor '" + key + "' has shape " +
                                  shape_text(it->second->shape) + "; the adapter needs " +
                                  shape_text(t.shape));
    values.emplace_back(static_cast<std::size_t>(t.elements()));
    source.read(*it->second, 0, values.back());
    by_key.erase(it);
  }
  if (!by_key.empty())
    throw std::invalid_argument(source.origin() + ": tensor '" + by_key.begin()->first +
                                "' belongs to no adapter of this model");
  session.set_trained_parameters(values);
}

void save_merged(const Session& session, const std::filesystem::path& path) {
  const Plan& plan = session.plan();
  std::map<TensorId, const LoraAdapter*> adapter_of;
  for (const LoraAdapter& a : plan.adapters) adapter_of[a.base] = &a;
  const std::vector<TensorId>& weights = plan.adapters.empty() ? plan.parameters : plan.frozen;
  std::vector<TensorSpec> specs;
  for (TensorId id : weights) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    specs.push_back({t.name, t.shape});
  }
  SafetensorsWriter writer(path, specs, gpt2_metadata(session.config().model));
  for (TensorId id : weights) {
    std::vector<float> w = session.values(id);
    if (const auto it = adapter_of.find(id); it != adapter_of.end()) {
      const LoraAdapter& a = *it->second;
      const std::vector<float> A = session.values(a.a), B = session.values(a.b);
      const Tensor& at = plan.tensors.at(static_cast<std::size_t>(a.a)).tensor;
      const Tensor& bt = plan.tensors.at(static_cast<std::size_t>(a.b)).tensor;
      const int64_t rank = at.shape[0], in = at.shape[1], out = bt.shape[0];
      // delta[o][i] = scale · Σ_r B[o][r]·A[r][i], summed in double, added once to W.
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double d = 0;
          for (int64_t r = 0; r < rank; ++r)
            d += double(B[size_t(o * rank + r)]) * double(A[size_t(r * in + i)]);
          float& x = a.fan_in_fan_out ? w[size_t(i * out + o)] : w[size_t(o * in + i)];
          x = static_cast<float>(double(x) + double(a.scale) * d);
        }
    }
    writer.write(w);
  }
  writer.commit();
}

}  // namespace remat
