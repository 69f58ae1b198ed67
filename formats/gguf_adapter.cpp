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
#include "formats/gguf_qwen35.h"
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
// Qwen3.5's Gated DeltaNet layers have these in place of self_attn's.
constexpr const char* kLinearAttnModules[] = {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z",
                                              "linear_attn.in_proj_a", "linear_attn.in_proj_b",
                                              "linear_attn.out_proj"};

// The architecture an adapter of `m` names: its base file's (llama.cpp refuses any other).
std::string arch_name_of(const ModelConfig& m) {
  return std::string(gguf_arch_name(gguf_arch_of(m)));
}

// Whether factor B (`b`) or A of a Qwen3.5 pair is stored permuted. The converter moves value
// heads along the rows of in_proj_qkv, _z, _a and _b and the columns of out_proj
// (formats/gguf_qwen35.h); B·A moves with its weight when B's rows move with the weight's rows
// and A's columns with its columns, the other factor as it is.
bool qwen35_moves(std::string_view weight, bool b) {
  if (weight.ends_with(".linear_attn.out_proj.weight")) return !b;
  return b && weight.find(".linear_attn.in_proj_") != std::string_view::npos;
}

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

}  // namespace

GgufMetadata gguf_adapter_metadata(const ModelConfig& m, double alpha) {
  GgufMetadata md("gguf adapter");
  md.set("general.architecture", GgufValue::of(arch_name_of(m)));
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
  const GgufArch arch = gguf_arch_of(m);
  std::vector<GgufTensorSpec> specs;
  std::vector<GgufLayout> b_layouts;
  for (const GgufAdapterPair& p : pairs) {
    const std::optional<std::string> name = gguf_tensor_name(p.weight, arch);
    if (!name)
      throw std::invalid_argument("'" + p.weight + "' has no GGUF name in a " + arch_name_of(m) +
                                  " model");
    specs.push_back({*name + std::string(kA), type, {uint64_t(p.in), uint64_t(p.rank)}});
    specs.push_back({*name + std::string(kB), type, {uint64_t(p.rank), uint64_t(p.out)}});
    GgufLayout l =
        m.qwen35 ? GgufLayout{} : gguf_layout(p.weight, arch, m.heads, m.kv_head_count());
    l.transposed = false;  // gpt2: PEFT's pair already multiplies out to the stored [out, in]
    if (l.rope_heads > 0) gguf_row_of(0, uint64_t(p.out), l.rope_heads);  // rows split in heads
    b_layouts.push_back(l);
  }
  GgufWriter writer(path, gguf_adapter_metadata(m, alpha), specs);
  auto factor = [&](std::size_t i, bool b, const std::vector<int64_t>& shape,
                    const GgufLayout& layout) {
    const std::string& weight = pairs[i].weight;
    auto piece = [&](uint64_t first, std::span<float> out) { read(i, b, first, out); };
    if (!(m.qwen35 && qwen35_moves(weight, b)))
      return write_gguf_values(writer, shape, layout, piece);
    // A factor is small (rank rows or columns): permuted whole.
    std::vector<float> v(elements(shape));
    piece(0, v);
    writer.write(std::span<const float>(qwen35_to_gguf(weight, shape, std::move(v), m)));
  };
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const GgufAdapterPair& p = pairs[i];
    factor(i, false, {p.rank, p.in}, GgufLayout{});
    factor(i, true, {p.out, p.rank}, b_layouts[i]);
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
  if (!a)
    fail(f, "general.architecture is '" + arch +
                "'; remat reads llama, qwen2, qwen3, gemma3, qwen35 and gpt2");
  arch_ = *a;
  qwen35_ = arch_ == GgufArch::qwen35;
  arch_name_ = arch;
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
  ModelConfig family;  // what the defaults depend on
  family.arch = arch_ == GgufArch::gpt2 ? Architecture::gpt2 : Architecture::llama;
  family.qwen35 = qwen35_;
  const std::vector<std::string> wanted = lora_targets(requested, family);
  const std::string prefix = arch_ == GgufArch::gpt2 ? "h." : "model.layers.";
  std::set<std::string> adapted, selected;
  for (const std::string& w : weights_)
    adapted.insert(w.substr(0, w.size() - std::string_view(".weight").size()));
  // A Qwen3.5 block is a Gated DeltaNet or a gated attention layer: the file says which by the
  // mixer projections it adapts there (a block with none adapted has only its MLP to select).
  auto has = [&](const std::string& block, std::string_view mixer) {
    for (const std::string& a : adapted)
      if (a.starts_with(block) && a.compare(block.size(), mixer.size(), mixer) == 0) return true;
    return false;
  };
  for (const std::string& module : adapted) {
    if (!module.starts_with(prefix)) continue;
    const std::string block = module.substr(0, module.find('.', prefix.size()) + 1);
    std::vector<const char*> modules;
    for (const char* m : arch_ == GgufArch::gpt2 ? kGpt2Modules : kLlamaModules)
      if (m && (!qwen35_ || std::string_view(m).starts_with("mlp.") || has(block, "self_attn.")))
        modules.push_back(m);
    if (qwen35_ && has(block, "linear_attn."))
      modules.insert(modules.end(), std::begin(kLinearAttnModules), std::end(kLinearAttnModules));
    for (const char* m : modules)
      if (lora_target_matches(block + m, wanted)) selected.insert(block + m);
  }
  if (selected == adapted) c.targets = wanted;
  return c;
}

std::vector<float> GgufAdapter::read(const std::string& weight, bool b,
                                     const std::vector<int64_t>& shape,
                                     const ModelConfig& m) const {
  const GgufFile& f = file_;
  if (arch_name_of(m) != arch_name_)
    fail(f, "is an adapter for a " + arch_name_ + " model; this model is " + arch_name_of(m));
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
  if (qwen35_) {
    if (!qwen35_moves(weight, b)) return stored;
    try {
      return qwen35_from_gguf(weight, shape, std::move(stored), m);
    } catch (const std::invalid_argument& e) {
      fail(f, "tensor '" + name + "': " + e.what());
    }
  }
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
