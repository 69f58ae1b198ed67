// `remat train`'s LoRA flags and the adapter and merged files they read and write (train_lora.h).
#include "train_lora.h"

#include <cstdio>

#include "formats/gguf_adapter.h"
#include "formats/peft_adapter.h"
#include "formats/weight_files.h"
#include "model_args.h"
#include "runtime/session_files.h"

namespace remat::cli {

std::vector<FlagSpec> train_lora_flags() {
  std::vector<FlagSpec> f = lora_flags();
  f.push_back({"--lora-init", "DIR",
               "continue the PEFT adapter in DIR (adapter_config.json, adapter_model.safetensors), "
               "or a llama.cpp LoRA adapter DIR.gguf",
               ""});
  f.push_back({"--save-adapter", "DIR",
               "write the adapter as PEFT does (needs --lora); to a path ending in .gguf, as a "
               "llama.cpp LoRA adapter (llama-cli -m M.gguf --lora A.gguf)",
               ""});
  f.push_back({"--adapter-dtype", "T", "f32 or f16: the tensors of a .gguf --save-adapter", "f32"});
  f.push_back({"--merge-out", "OUT.safetensors",
               "write full weights with the adapters folded in (needs --lora); to a path ending in "
               ".gguf, as a llama.cpp model (--save-dtype)",
               ""});
  return f;
}

TrainLora parse_train_lora(const Args& a, const std::optional<std::filesystem::path>& base_init,
                           const ModelConfig& model) {
  TrainLora l;
  if (auto d = a.get("--lora-init")) l.init = *d;
  l.spec = parse_lora_flags(a, l.init.has_value());
  if (l.init) {
    try {
      const AdapterConfig file = names_gguf_file(*l.init)
                                     ? GgufAdapter::open(*l.init).config(l.spec)
                                     : read_adapter_config(*l.init);
      l.spec = lora_spec_for(file, l.spec, model, l.init->string());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--lora-init: ") + e.what());
    }
  }
  if (auto d = a.get("--save-adapter")) {
    l.save_adapter = *d;
    if (names_gguf_file(*d))
      check_output_path(*d, "--save-adapter");
    else
      check_output_folder(*d, "--save-adapter");
  }
  if (const std::string t = a.get_or_default("--adapter-dtype"); t == "f16")
    l.adapter_type = GgmlType::f16;
  else if (t != "f32")
    throw UsageError("--adapter-dtype must be f32 or f16, not '" + t + "'");
  if (a.has("--adapter-dtype") && !(l.save_adapter && names_gguf_file(*l.save_adapter)))
    throw UsageError("--adapter-dtype needs --save-adapter A.gguf");
  if (auto f = a.get("--merge-out")) {
    l.merge_out = *f;
    check_output_path(l.merge_out->string(), "--merge-out");
  }
  if (!l.spec.enabled() && (l.save_adapter || l.merge_out))
    throw UsageError("--save-adapter and --merge-out need --lora R (or --lora-init DIR)");
  if (base_init) l.base_model = base_init->string();
  return l;
}

void load_lora_init(Session& session, const TrainLora& lora) {
  if (lora.init) load_adapter(session, *lora.init);
}

void print_lora(const Session& session, const TrainLora& lora) {
  if (!lora.spec.enabled()) return;
  const Plan& p = session.plan();
  uint64_t trained = 0, frozen = 0;
  for (TensorId t : p.parameters) trained += uint64_t(p.tensors[size_t(t)].tensor.elements());
  for (TensorId t : p.frozen) frozen += uint64_t(p.tensors[size_t(t)].tensor.elements());
  std::string targets;
  for (const auto& t : lora_targets(lora.spec, session.config().model))
    targets += (targets.empty() ? "" : ",") + t;
  std::printf(
      "lora     r %d, alpha %g (scale %g), targets %s: %zu adapters, %.3fM trained of %.2fM"
      " frozen%s\n",
      lora.spec.rank, lora.spec.effective_alpha(), double(lora.spec.scale()), targets.c_str(),
      p.adapters.size(), double(trained) / 1e6, double(frozen) / 1e6,
      lora.init ? (", continuing " + lora.init->string()).c_str() : "");
}

void save_lora_outputs(const Session& session, const TrainLora& lora, const GgufSaveOptions& gguf,
                       bool announce) {
  if (lora.save_adapter) {
    save_adapter(session, *lora.save_adapter, lora.base_model, gguf);
    if (announce) std::printf("adapter  %s\n", lora.save_adapter->string().c_str());
  }
  if (lora.merge_out) {
    save_merged(session, *lora.merge_out, gguf);
    if (announce) std::printf("merged   %s\n", lora.merge_out->string().c_str());
  }
}

}  // namespace remat::cli
