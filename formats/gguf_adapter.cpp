// GGUF LoRA adapters (formats/gguf_adapter.h): metadata and pairs written as
// convert_lora_to_gguf.py writes them, and read back into PEFT's layout.
#include "formats/gguf_adapter.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "formats/gguf_blocks.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_writer.h"

namespace remat {
namespace {

constexpr std::string_view kA = ".lora_a", kB = ".lora_b";

// The matmul modules of a block, which LoRA targets select from.
constexpr const char* kLlamaModules[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                         "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                         "mlp.down_proj"};
constexpr const char* kGpt2Modules[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj",
                                        nullptr,       nullptr,       nullptr};

[[noreturn]] void fail(const GgufFile& f, const std::string& what) {
  throw std::invalid_argument(f.origin() + ": " + what);
}

std::string required_string(const GgufFile& f, const std::string& key) {
  const std::optional<std::string> v = f.metadata().string(key);
  if (!v) fail(f, "has no '" + key + "'; a LoRA adapter for llama.cpp has it");
  return *v;
}

// "model.layers.3.self_attn.q_proj.weight" -> "q_proj"; "h.3.attn.c_attn.weight" ->
// "attn.c_attn": a block's module as the architecture's default targets name it.
std::string target_of(const std::string& weight, GgufArch arch) {
  std::string module = weight.substr(0, weight.size() - std::string_view(".weight").size());
  const std::string prefix = arch == GgufArch::gpt2 ? "h." : "model.layers.";
  if (module.starts_with(prefix)) {
    const std::size_t dot = module.find('.', prefix.size());
    module = module.substr(dot + 1);
  }
  if (arch != GgufArch::gpt2) module = module.substr(module.rfind('.') + 1);
  return module;
}

uint64_t elements(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

// The converter reorders Qwen3.5's value heads and stores A_log as -exp(A_log) in the base; an
// adapter would need the same on its B rows and A columns, which no test covers yet.
GgufArch adapter_arch(const ModelConfig& m) {
  if (m.qwen35)
    throw std::invalid_argument(
        "Qwen3.5 LoRA adapters are not read or written as GGUF yet; save a PEFT adapter folder "
        "or the merged model instead");
  return gguf_arch_of(m);
}

}  // namespace

GgufMetadata gguf_adapter_metadata(const ModelConfig& m, double alpha) {
  GgufMetadata md("gguf adapter");
  md.set("general.architecture", GgufValue::of(std::string(gguf_arch_name(adapter_arch(m)))));
  md.set("general.type", GgufValue::of("adapter"));
  md.set("general.name", GgufValue::of("remat LoRA adapter"));
  md.set("adapter.type", GgufValue::of("lora"));
  md.set("adapter.lora.alpha", GgufValue::of(static_cast<float>(alpha)));
  return md;
}

void write_gguf_adapter(const std::filesystem::path& path, const ModelConfig& m, double alpha,
                        const std::vector<GgufAdapterPair>& pairs, const GgufAdapterReader& read,
                        GgmlType type) {
  if (type != GgmlType::f32 && type != GgmlType::f16)
    throw std::invalid_argument("GGUF adapters are written as f32 or f16");
  const GgufArch arch = adapter_arch(m);
  std::vector<GgufTensorSpec> specs;
  std::vector<GgufLayout> b_layouts;
  for (const GgufAdapterPair& p : pairs) {
    const std::optional<std::string> name = gguf_tensor_name(p.weight, arch);
    if (!name)
      throw std::invalid_argument("'" + p.weight + "' has no GGUF name in a " +
                                  std::string(gguf_arch_name(arch)) + " model");
    specs.push_back({*name + std::string(kA), type, {uint64_t(p.in), uint64_t(p.rank)}});
    specs.push_back({*name + std::string(kB), type, {uint64_t(p.rank), uint64_t(p.out)}});
    GgufLayout l = gguf_layout(p.weight, arch, m.heads, m.kv_head_count());
    l.transposed = false;  // gpt2: PEFT's pair already multiplies out to the stored [out, in]
    if (l.rope_heads > 0) gguf_row_of(0, uint64_t(p.out), l.rope_heads);  // rows split in heads
    b_layouts.push_back(l);
  }
  GgufWriter writer(path, gguf_adapter_metadata(m, alpha), specs);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const GgufAdapterPair& p = pairs[i];
    write_gguf_values(writer, {p.rank, p.in}, GgufLayout{},
                      [&](uint64_t first, std::span<float> out) { read(i, false, first, out); });
    write_gguf_values(writer, {p.out, p.rank}, b_layouts[i],
                      [&](uint64_t first, std::span<float> out) { read(i, true, first, out); });
  }
  writer.commit();
}

GgufAdapter::GgufAdapter(GgufFile file) : file_(std::move(file)) {
  const GgufFile& f = file_;
  if (const std::string t = required_string(f, "general.type"); t != "adapter")
    fail(f, "general.type is '" + t + "', not 'adapter': give a LoRA adapter, not a model");
  if (const std::string t = required_string(f, "adapter.type"); t != "lora")
    fail(f, "adapter.type is '" + t + "'; remat reads LoRA adapters ('lora')");
  const std::string arch = required_string(f, "general.architecture");
  const std::optional<GgufArch> a = gguf_arch(arch);
  if (!a) fail(f, "general.architecture is '" + arch + "'; remat reads llama, qwen2 and gpt2");
  arch_ = *a;
  f.check_supported();
  std::map<std::string, std::pair<const GgufTensor*, const GgufTensor*>> pairs;
  std::vector<std::string> order;
  for (const GgufTensor& t : f.tensors()) {
    const bool is_a = t.name.ends_with(kA), is_b = t.name.ends_with(kB);
    if (!is_a && !is_b) fail(f, "tensor '" + t.name + "' is neither a .lora_a nor a .lora_b");
    const std::string base = t.name.substr(0, t.name.size() - kA.size());
    if (!hf_tensor_name(base, arch_) || !base.ends_with(".weight"))
      fail(f, "tensor '" + t.name + "' adapts '" + base + "', which is no weight of a " + arch +
                  " model remat trains");
    if (t.ne.size() != 2) fail(f, "tensor '" + t.name + "' is not a matrix");
    auto [it, fresh] = pairs.try_emplace(base);
    if (fresh) order.push_back(base);
    (is_a ? it->second.first : it->second.second) = &t;
  }
  if (order.empty()) fail(f, "holds no LoRA tensors");
  for (const std::string& base : order) {
    const auto [ta, tb] = pairs[base];
    if (!ta || !tb)
      fail(f, "'" + base + "' has a " + (ta ? ".lora_a" : ".lora_b") + " but no " +
                  (ta ? ".lora_b" : ".lora_a"));
    const int rank = static_cast<int>(ta->ne[1]);
    if (tb->ne[0] != ta->ne[1])
      fail(f, "'" + base + "': lora_a has rank " + std::to_string(ta->ne[1]) + " and lora_b " +
                  std::to_string(tb->ne[0]));
    if (rank_ != 0 && rank != rank_)
      fail(f, "'" + base + "' has rank " + std::to_string(rank) + " where others have " +
                  std::to_string(rank_) + "; remat trains one rank throughout");
    rank_ = rank;
    weights_.push_back(*hf_tensor_name(base, arch_));
  }
}

AdapterConfig GgufAdapter::config(const LoraSpec& requested) const {
  AdapterConfig c;
  c.rank = rank_;
  const std::optional<double> alpha = file_.metadata().number("adapter.lora.alpha");
  c.alpha = alpha && *alpha != 0 ? *alpha : rank_;
  std::set<std::string> targets;
  for (const std::string& w : weights_) targets.insert(target_of(w, arch_));
  c.targets.assign(targets.begin(), targets.end());
  c.fan_in_fan_out = arch_ == GgufArch::gpt2;
  if (!requested.enabled()) return c;
  if (static_cast<float>(requested.effective_alpha()) == static_cast<float>(c.alpha))
    c.alpha = requested.effective_alpha();
  // The modules of the adapted blocks that the requested targets select, against the adapted.
  const Architecture family = arch_ == GgufArch::gpt2 ? Architecture::gpt2 : Architecture::llama;
  const std::vector<std::string> wanted = lora_targets(requested, family);
  const std::string prefix = arch_ == GgufArch::gpt2 ? "h." : "model.layers.";
  std::set<std::string> adapted, selected;
  for (const std::string& w : weights_) {
    const std::string module = w.substr(0, w.size() - std::string_view(".weight").size());
    adapted.insert(module);
    if (!module.starts_with(prefix)) continue;
    const std::string block = module.substr(0, module.find('.', prefix.size()) + 1);
    for (const char* m : arch_ == GgufArch::gpt2 ? kGpt2Modules : kLlamaModules)
      if (m && lora_target_matches(block + m, wanted)) selected.insert(block + m);
  }
  if (selected == adapted) c.targets = wanted;
  return c;
}

std::vector<float> GgufAdapter::read(const std::string& weight, bool b,
                                     const std::vector<int64_t>& shape,
                                     const ModelConfig& m) const {
  const GgufFile& f = file_;
  if (adapter_arch(m) != arch_)
    fail(f, "is an adapter for a " + std::string(gguf_arch_name(arch_)) + " model; this model is " +
                std::string(gguf_arch_name(gguf_arch_of(m))));
  const std::optional<std::string> base = gguf_tensor_name(weight, arch_);
  const std::string name = (base ? *base : weight) + std::string(b ? kB : kA);
  const GgufTensor* t = f.tensor(name);
  if (!t) fail(f, "has no tensor '" + name + "'");
  if (shape.size() != 2 || t->ne != std::vector<uint64_t>{uint64_t(shape[1]), uint64_t(shape[0])})
    fail(f, "tensor '" + name + "' has ggml dimensions [" + std::to_string(t->ne[0]) + ", " +
                std::to_string(t->ne[1]) + "]; the adapter needs [" + std::to_string(shape[1]) +
                ", " + std::to_string(shape[0]) + "]");
  std::vector<std::byte> bytes(t->bytes);
  f.read(*t, 0, bytes);
  std::vector<float> stored(elements(shape));
  decode_blocks(t->type, bytes, stored);
  for (float v : stored)
    if (!std::isfinite(v)) fail(f, "tensor '" + name + "' holds a value that is not finite");
  const GgufLayout layout = gguf_layout(weight, arch_, m.heads, m.kv_head_count());
  if (!b || layout.rope_heads == 0) return stored;
  // B's rows were permuted as the base weight's: PEFT row r is stored row gguf_row_of(r).
  const uint64_t rows = uint64_t(shape[0]), cols = uint64_t(shape[1]);
  std::vector<float> out(stored.size());
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t g = gguf_row_of(r, rows, layout.rope_heads);
    std::copy_n(stored.begin() + std::ptrdiff_t(g * cols), cols,
                out.begin() + std::ptrdiff_t(r * cols));
  }
  return out;
}

}  // namespace remat
