// Where a session's values meet files: Hugging Face folders, safetensors, PEFT folders, and GGUF
// models and adapters, the values read from the device piece by piece.
#include "runtime/session_files.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "formats/gguf_adapter.h"
#include "formats/gguf_model_writer.h"
#include "formats/hf_config.h"
#include "formats/hf_folder.h"
#include "formats/model_metadata.h"
#include "formats/peft_adapter.h"
#include "formats/qwen35_file_extras.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "runtime/float_storage.h"
#include "runtime/session.h"
#include "runtime/vulkan/staging.h"

namespace remat {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw std::invalid_argument(path.string() + ": " + what);
}

const Tensor& tensor_of(const Plan& plan, TensorId id) {
  return plan.tensors.at(static_cast<std::size_t>(id)).tensor;
}

// The model's weights: under LoRA the frozen base, else the trained parameters.
const std::vector<TensorId>& model_weights(const Plan& plan) {
  return plan.adapters.empty() ? plan.parameters : plan.frozen;
}

// Elements [first, first + out.size()) of a persistent tensor, downloaded through `staging`.
void read_values(const Session& session, Staging& staging, TensorId id, uint64_t first,
                 std::span<float> out) {
  download_values(staging, session.persistent_slice(id), tensor_of(session.plan(), id), first, out);
}

// Whether adapter `a`'s base weight is [in, out] in files (PEFT's fan_in_fan_out: GPT-2's Conv1D),
// whichever way the device holds it (Session::values gives the file's order).
bool file_fan_in_fan_out(const Session& session, const LoraAdapter& a) {
  return a.fan_in_fan_out || session.held_transposed(a.base);
}

// Adds adapter `a`'s scale·B·A to elements [first, first + w.size()) of its base weight in the
// file's order, each delta summed in double over the rank and added once.
void fold_in(const Session& session, const LoraAdapter& a, const std::vector<float>& A,
             const std::vector<float>& B, uint64_t first, std::span<float> w) {
  const Tensor& at = tensor_of(session.plan(), a.a);
  const Tensor& bt = tensor_of(session.plan(), a.b);
  const uint64_t rank = uint64_t(at.shape[0]), in = uint64_t(at.shape[1]),
                 out = uint64_t(bt.shape[0]);
  const bool fan_in_fan_out = file_fan_in_fan_out(session, a);
  for (std::size_t k = 0; k < w.size(); ++k) {
    const uint64_t e = first + k;
    const uint64_t o = fan_in_fan_out ? e % out : e / in;
    const uint64_t i = fan_in_fan_out ? e / out : e % in;
    double d = 0;
    for (uint64_t r = 0; r < rank; ++r)
      d += double(B[std::size_t(o * rank + r)]) * double(A[std::size_t(r * in + i)]);
    w[k] = static_cast<float>(double(w[k]) + double(a.scale) * d);
  }
}

void write_gguf(const Session& session, const fs::path& path, const GgufSaveOptions& options,
                bool merge) {
  const Plan& plan = session.plan();
  std::map<TensorId, const LoraAdapter*> adapter_of;
  if (merge)
    for (const LoraAdapter& a : plan.adapters) adapter_of[a.base] = &a;
  const std::vector<TensorId>& weights = model_weights(plan);
  std::vector<GgufSourceTensor> tensors;
  uint64_t total = 0;
  for (TensorId id : weights) {
    const Tensor& t = tensor_of(plan, id);
    tensors.push_back({t.name, session.file_shape(id)});
    total += uint64_t(t.elements()) * sizeof(float);
  }
  GgufModelOptions o;
  o.matrix_type = options.matrix_type;
  o.name = options.name;
  o.extra = options.extra;
  if (const Qwen35FileExtras* extras = session.file_extras())
    add_qwen35_gguf_extras(o, *extras, session.config().model, [&](const std::string& name) {
      for (TensorId id : weights)
        if (tensor_of(plan, id).name == name) return session.values(id);
      throw std::logic_error("no weight '" + name + "' to compare with the file's");
    });
  Staging staging(session.device());
  // The adapter pair of the tensor being written, downloaded once; so is a weight the device
  // holds transposed (Session::values gives it in the file's order).
  std::size_t pair_of = weights.size(), whole_of = weights.size();
  std::vector<float> A, B, whole;
  const ProgressFn& progress = session.config().progress;
  report_progress(progress, "save", 0, total);
  write_gguf_model(
      path, session.config().model, tensors,
      [&](std::size_t i, uint64_t first, std::span<float> out) {
        if (!session.held_transposed(weights[i])) {
          read_values(session, staging, weights[i], first, out);
        } else {
          if (whole_of != i) whole = session.values(weights[i]), whole_of = i;
          std::copy_n(whole.begin() + std::ptrdiff_t(first), out.size(), out.begin());
        }
        const auto it = adapter_of.find(weights[i]);
        if (it == adapter_of.end()) return;
        if (pair_of != i) {
          A = session.values(it->second->a);
          B = session.values(it->second->b);
          pair_of = i;
        }
        fold_in(session, *it->second, A, B, first, out);
      },
      o,
      [&](uint64_t floats) { report_progress(progress, "save", floats * sizeof(float), total); });
}

void save_gguf_adapter(const Session& session, const fs::path& path,
                       const GgufSaveOptions& options) {
  const Plan& plan = session.plan();
  std::vector<GgufAdapterPair> pairs;
  for (const LoraAdapter& a : plan.adapters) {
    const Tensor& at = tensor_of(plan, a.a);
    const Tensor& bt = tensor_of(plan, a.b);
    pairs.push_back({tensor_of(plan, a.base).name, at.shape[0], at.shape[1], bt.shape[0]});
  }
  Staging staging(session.device());
  write_gguf_adapter(
      path, session.config().model, session.config().lora.effective_alpha(), pairs,
      [&](std::size_t i, bool b, uint64_t first, std::span<float> out) {
        const LoraAdapter& a = plan.adapters[i];
        read_values(session, staging, b ? a.b : a.a, first, out);
      },
      options.adapter_type);
}

void load_gguf_adapter(Session& session, const fs::path& path) {
  const Plan& plan = session.plan();
  const GgufAdapter file = GgufAdapter::open(path);
  const ModelConfig& m = session.config().model;
  const LoraSpec& spec = session.config().lora;
  const AdapterConfig config = file.config(spec);
  lora_spec_for(config, spec, m, file.file().origin());
  std::map<TensorId, std::pair<const LoraAdapter*, bool>> role;  // parameter -> (adapter, is B)
  for (const LoraAdapter& a : plan.adapters) {
    role[a.a] = {&a, false};
    role[a.b] = {&a, true};
  }
  std::set<std::string> adapted;
  std::vector<std::vector<float>> values;
  for (TensorId id : plan.parameters) {
    const auto [a, is_b] = role.at(id);
    const std::string& weight = tensor_of(plan, a->base).name;
    values.push_back(file.read(weight, is_b, tensor_of(plan, id).shape, m));
    adapted.insert(weight);
  }
  for (const std::string& w : file.weights())
    if (!adapted.count(w))
      throw std::invalid_argument(file.file().origin() + ": it adapts '" + w +
                                  "', which this session has no adapter for");
  session.set_trained_parameters(values);
}

}  // namespace

void save_gguf(const Session& session, const fs::path& path, const GgufSaveOptions& options) {
  write_gguf(session, path, options, false);
}

void save_hf_folder(const Session& session, const fs::path& dir) {
  // The config first in memory: a model config.json cannot describe fails before any write.
  // A Qwen3.5 model counts the MTP layers it writes (formats/qwen35_file_extras.h).
  const ModelConfig& m = session.config().model;
  const Qwen35FileExtras* extras = session.file_extras();
  const std::string config =
      hf_config_json(m.qwen35 ? qwen35_saved_model(m, extras && extras->has_mtp()) : m);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail(dir, "is a file; give a folder to save the model into, or a path ending in .safetensors");
  fs::create_directory(dir, ec);
  if (ec) fail(dir, "cannot create the folder (" + ec.message() + ")");
  session.save(dir / kHfWeightsFile);
  write_file_atomically(dir / kHfConfigFile, config);
}

void check_checkpoint_writable(const Session& session, const fs::path& path) {
  if (const Qwen35FileExtras* extras = session.file_extras())
    check_qwen35_extras_writable(*extras, session.config().model, names_gguf_file(path));
}

void save_checkpoint(const Session& session, const fs::path& path, const GgufSaveOptions& options) {
  if (names_gguf_file(path))
    save_gguf(session, path, options);
  else if (names_safetensors_file(path))
    session.save(path);
  else
    save_hf_folder(session, path);
}

void save_adapter(const Session& session, const std::filesystem::path& dir,
                  const std::string& base_model, const GgufSaveOptions& options) {
  const Plan& plan = session.plan();
  if (plan.adapters.empty())
    throw std::invalid_argument("the session trains no LoRA adapters; nothing to save");
  if (names_gguf_file(dir)) return save_gguf_adapter(session, dir, options);
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
  spec.targets = lora_targets(spec, session.config().model);
  write_file_atomically(
      dir / kPeftConfigFile,
      adapter_config_json(spec, file_fan_in_fan_out(session, plan.adapters.front()), base_model));
}

void load_adapter(Session& session, const std::filesystem::path& dir) {
  const Plan& plan = session.plan();
  if (plan.adapters.empty())
    throw std::invalid_argument("the session trains no LoRA adapters; nothing to load into");
  if (names_gguf_file(dir)) return load_gguf_adapter(session, dir);
  const std::string origin = dir.string();
  const AdapterConfig config = read_adapter_config(dir);
  const ModelConfig& model = session.config().model;
  const Architecture arch = model.arch;
  lora_spec_for(config, session.config().lora, model, origin);
  const bool fan_in_fan_out = file_fan_in_fan_out(session, plan.adapters.front());
  if (config.fan_in_fan_out != fan_in_fan_out)
    throw std::invalid_argument(origin + ": fan_in_fan_out must be " +
                                (fan_in_fan_out ? "true" : "false") + " for this model's weights");
  const SafetensorsSource source = SafetensorsSource::open(dir / kPeftWeightsFile);
  std::map<std::string, const SafetensorsEntry*> by_key;
  // An adapter PEFT trained on multimodal Qwen3.5 names the text model's tensors under
  // model.language_model; its vision tower's, if any, stay unmatched and are refused below.
  for (const SafetensorsEntry& e : source.header().tensors)
    by_key[model.qwen35 ? peft_text_model_key(e.name).value_or(e.name) : e.name] = &e;
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

void save_merged(const Session& session, const std::filesystem::path& path,
                 const GgufSaveOptions& options) {
  if (names_gguf_file(path)) return write_gguf(session, path, options, true);
  const Plan& plan = session.plan();
  std::map<TensorId, const LoraAdapter*> adapter_of;
  for (const LoraAdapter& a : plan.adapters) adapter_of[a.base] = &a;
  const std::vector<TensorId>& weights = model_weights(plan);
  std::vector<TensorSpec> specs;
  for (TensorId id : weights) specs.push_back({tensor_of(plan, id).name, session.file_shape(id)});
  auto merged = [&](std::size_t i) {
    std::vector<float> w = session.values(weights[i]);
    if (const auto it = adapter_of.find(weights[i]); it != adapter_of.end())
      fold_in(session, *it->second, session.values(it->second->a), session.values(it->second->b), 0,
              w);
    return w;
  };
  const ModelConfig& m = session.config().model;
  if (m.qwen35) {  // as Hugging Face holds it, with what was loaded besides
    write_qwen35_safetensors(path, m, specs, session.file_extras(),
                             [&](std::size_t i, SafetensorsWriter& w) { w.write(merged(i)); });
    return;
  }
  SafetensorsWriter writer(path, specs, model_metadata(m));
  for (std::size_t i = 0; i < weights.size(); ++i) writer.write(merged(i));
  writer.commit();
}

}  // namespace remat
