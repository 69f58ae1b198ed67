#include "train_lora.h"

#include <cstdio>

#include "formats/peft_adapter.h"
#include "model_args.h"
#include "runtime/session_files.h"

namespace remat::cli {

std::vector<FlagSpec> train_lora_flags() {
  std::vector<FlagSpec> f = lora_flags();
  f.push_back({"--lora-init", "DIR",
               "continue the PEFT adapter in DIR (adapter_config.json, adapter_model.safetensors)",
               ""});
  f.push_back({"--save-adapter", "DIR", "write the adapter as PEFT does (needs --lora)", ""});
  f.push_back({"--merge-out", "OUT.safetensors",
               "write full weights with the adapters folded in (needs --lora)", ""});
  return f;
}

TrainLora parse_train_lora(const Args& a, const std::optional<std::filesystem::path>& base_init,
                           Architecture arch) {
  TrainLora l;
  if (auto d = a.get("--lora-init")) l.init = *d;
  l.spec = parse_lora_flags(a, l.init.has_value());
  if (l.init) {
    try {
      l.spec = lora_spec_for(read_adapter_config(*l.init), l.spec, arch, l.init->string());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--lora-init: ") + e.what());
    }
  }
  if (auto d = a.get("--save-adapter")) {
    l.save_adapter = *d;
    check_output_folder(l.save_adapter->string(), "--save-adapter");
  }
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
  for (const auto& t : lora_targets(lora.spec, session.config().model.arch))
    targets += (targets.empty() ? "" : ",") + t;
  std::printf(
      "lora     r %d, alpha %g (scale %g), targets %s: %zu adapters, %.3fM trained of %.2fM"
      " frozen%s\n",
      lora.spec.rank, lora.spec.effective_alpha(), double(lora.spec.scale()), targets.c_str(),
      p.adapters.size(), double(trained) / 1e6, double(frozen) / 1e6,
      lora.init ? (", continuing " + lora.init->string()).c_str() : "");
}

void save_lora_outputs(const Session& session, const TrainLora& lora, bool announce) {
  if (lora.save_adapter) {
    save_adapter(session, *lora.save_adapter, lora.base_model);
    if (announce) std::printf("adapter  %s\n", lora.save_adapter->string().c_str());
  }
  if (lora.merge_out) {
    save_merged(session, *lora.merge_out);
    if (announce) std::printf("merged   %s\n", lora.merge_out->string().c_str());
  }
}

}  // namespace remat::cli
