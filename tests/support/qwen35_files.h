// Random tiny Qwen3.5 checkpoints as others write them, for the tests that load and save them:
// a Hugging Face folder (transformers' names and shapes: conv1d [channels, 1, kernel], matrices
// bf16, vectors f32, an mtp.* layer in f16 and bf16; the text model alone, or the multimodal form
// with its text model under model.language_model.* beside a vision tensor) and a GGUF file as
// llama.cpp's converter writes one (the qwen35.* keys, its names and transforms, an MTP block
// blk.L.* with its nextn.* tensors, matrices bf16, conv1d and vectors f32). Both hold the same
// values: what the trunk's parameters are is Qwen35Weights. load_qwen35 and save_qwen35_* read
// and write them as a session does (runtime/session_weights.cpp, session_files.cpp), from host
// memory.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/half_float.h"
#include "formats/gguf_model.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_qwen35.h"
#include "formats/gguf_writer.h"
#include "formats/hf_config.h"
#include "formats/hf_folder.h"
#include "formats/model_weights.h"
#include "formats/qwen35_file_extras.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "graph/model_builder.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"

namespace remat::test {

// 4 layers (full attention every second), width 64, MLP 96, vocabulary 100; linear layers with
// 2 key heads and 4 value heads of 16 (so the converter's value-head reordering moves rows), a
// conv1d of 4 taps; full attention 4 query heads of 32 over 2 key/value heads, RoPE on a quarter;
// one MTP layer; an untied head.
inline ModelConfig tiny_qwen35() {
  ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  m.layers = 4;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_size = 32;
  m.ffn = 96;
  m.vocab = 100;
  m.ctx = 64;
  m.tied_head = false;
  Qwen35Layers& q = m.qwen35_layers;
  q.full_attention_interval = 2;
  q.linear_key_heads = 2;
  q.linear_value_heads = 4;
  q.linear_key_head_dim = 16;
  q.linear_value_head_dim = 16;
  q.conv_kernel = 4;
  q.partial_rotary = 0.25f;
  q.mtp_layers = 1;
  q.mrope_section = {2, 1, 1};
  m.validate();
  return m;
}

using Qwen35Weights = std::vector<NamedTensor>;  // remat's names and shapes, f32 values

// The trunk's parameters in graph order, random: matrices and gains in +-0.3, every value a
// bfloat16 as released checkpoints hold them (so the converter's 1 + w is exact); A_log in
// [-1, 2], float32.
inline Qwen35Weights qwen35_weights(const ModelConfig& m, uint64_t seed) {
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 8;
  const Graph g = build_model(m, shape);
  Qwen35Weights w;
  for (std::size_t i = 0; i < g.parameters.size(); ++i) {
    const Tensor& t = g.tensor(g.parameters[i]);
    const bool a_log = t.name.ends_with(".A_log");
    NamedTensor n{t.name, t.shape,
                  random_floats(std::size_t(t.elements()), seed * 1000 + i, a_log ? -1.0f : -0.3f,
                                a_log ? 2.0f : 0.3f)};
    if (!a_log)  // Qwen3.5's checkpoints keep A_log in float32
      for (float& v : n.values) v = bf16_to_float(float_to_bf16(v));
    w.push_back(std::move(n));
  }
  return w;
}

// The MTP layer as transformers names it, random: name, shape, dtype (vectors F32 but one BF16,
// matrices BF16 but fc F16).
inline std::vector<NamedTensor> qwen35_mtp_tensors(const ModelConfig& m, uint64_t seed) {
  const int64_t d = m.dim, hd = m.head_dim(), f = m.mlp_width();
  const int64_t q = 2 * m.heads * hd, kv = m.kv_head_count() * hd;
  const std::string l = "mtp.layers.0.";
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"mtp.fc.weight", {d, 2 * d}},
      {"mtp.pre_fc_norm_embedding.weight", {d}},
      {"mtp.pre_fc_norm_hidden.weight", {d}},
      {"mtp.norm.weight", {d}},
      {l + "input_layernorm.weight", {d}},
      {l + "post_attention_layernorm.weight", {d}},
      {l + "self_attn.q_proj.weight", {q, d}},
      {l + "self_attn.k_proj.weight", {kv, d}},
      {l + "self_attn.v_proj.weight", {kv, d}},
      {l + "self_attn.o_proj.weight", {d, m.heads * hd}},
      {l + "self_attn.q_norm.weight", {hd}},
      {l + "self_attn.k_norm.weight", {hd}},
      {l + "mlp.gate_proj.weight", {f, d}},
      {l + "mlp.up_proj.weight", {f, d}},
      {l + "mlp.down_proj.weight", {d, f}},
  };
  std::vector<NamedTensor> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, shape] = shapes[i];
    std::size_t n = 1;
    for (int64_t s : shape) n *= std::size_t(s);
    const char* dtype = name == "mtp.fc.weight"                      ? "F16"
                        : name == "mtp.pre_fc_norm_embedding.weight" ? "BF16"
                        : shape.size() == 1                          ? "F32"
                                                                     : "BF16";
    NamedTensor t{name, shape, random_floats(n, seed * 7000 + i, -0.3f, 0.3f), dtype};
    // Every value a bfloat16 (so the converter's 1 + w of a norm is exact), then of its dtype.
    for (float& v : t.values) {
      v = bf16_to_float(float_to_bf16(v));
      if (t.source_dtype == "F16") v = f16_to_float(float_to_f16(v));
    }
    out.push_back(std::move(t));
  }
  return out;
}

// A Hugging Face folder of `w` and `mtp`: config.json and one model.safetensors.
inline void write_qwen35_folder(const std::filesystem::path& dir, const ModelConfig& m,
                                const Qwen35Weights& w, const std::vector<NamedTensor>& mtp,
                                bool multimodal) {
  std::filesystem::create_directories(dir);
  std::vector<TensorSpec> specs;
  std::vector<const std::vector<float>*> values;
  for (const NamedTensor& t : w) {
    TensorSpec s{t.name, t.shape, t.shape.size() == 2 ? "BF16" : "F32"};
    if (t.name.ends_with(".conv1d.weight")) s.shape = {t.shape[0], 1, t.shape[1]};
    if (multimodal && t.name.starts_with("model."))
      s.name = "model.language_model." + t.name.substr(6);
    specs.push_back(s);
    values.push_back(&t.values);
  }
  for (const NamedTensor& t : mtp) {
    specs.push_back({t.name, t.shape, t.source_dtype});
    values.push_back(&t.values);
  }
  const std::vector<float> vision = random_floats(3 * 16, 77, -1.0f, 1.0f);
  if (multimodal) {
    specs.push_back({"model.visual.blocks.0.attn.qkv.weight", {3, 16}, "BF16"});
    values.push_back(&vision);
  }
  SafetensorsWriter out(dir / "model.safetensors", specs, {{"format", "pt"}});
  for (const auto* v : values) out.write(*v);
  out.commit();
  std::string config = hf_config_json(m);
  if (multimodal)
    config =
        "{\"architectures\": [\"Qwen3_5ForConditionalGeneration\"], \"model_type\": "
        "\"qwen3_5\", \"vision_config\": {\"depth\": 1}, \"text_config\": " +
        config + "}";
  write_file_atomically(dir / "config.json", config);
}

// The name the converter gives an MTP tensor before it transforms it (conversion/qwen.py,
// _QwenMtpMixin.filter_tensors): model.layers.N.*.
inline std::string qwen35_mtp_converter_name(const std::string& hf, int layers) {
  const std::string blk = "model.layers." + std::to_string(layers) + ".";
  if (hf == "mtp.fc.weight") return blk + "eh_proj.weight";
  if (hf == "mtp.pre_fc_norm_embedding.weight") return blk + "enorm.weight";
  if (hf == "mtp.pre_fc_norm_hidden.weight") return blk + "hnorm.weight";
  if (hf == "mtp.norm.weight") return blk + "shared_head.norm.weight";
  return blk + hf.substr(13);  // mtp.layers.0.X
}

// Its GGUF name (gguf-py's tensor_mapping.py: the NEXTN tensors, then the block's own).
inline std::string qwen35_mtp_gguf_name(const std::string& hf, int layers) {
  const std::string renamed = qwen35_mtp_converter_name(hf, layers);
  const std::string blk = "blk." + std::to_string(layers) + ".";
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"eh_proj.weight", "nextn.eh_proj.weight"},
        {"enorm.weight", "nextn.enorm.weight"},
        {"hnorm.weight", "nextn.hnorm.weight"},
        {"shared_head.norm.weight", "nextn.shared_head_norm.weight"}})
    if (renamed == "model.layers." + std::to_string(layers) + "." + from) return blk + to;
  return *qwen35_gguf_tensor_name(renamed);
}

// A GGUF file of `w` and `mtp` as the converter writes them with --outtype bf16, and `extra`
// keys (a tokenizer, say) after the model's. `foreign_ssm_a`: ssm_a random in [-8, -0.3), as a
// file another tool wrote may hold it, much of it -exp of no float32 (-exp of a float32 comes
// back through log and exp exactly; other floats often do not).
inline void write_qwen35_gguf(const std::filesystem::path& path, const ModelConfig& m,
                              const Qwen35Weights& w, const std::vector<NamedTensor>& mtp,
                              const GgufMetadata& extra = GgufMetadata("extra"),
                              bool foreign_ssm_a = false) {
  GgufMetadata md("qwen35 test file");
  md.set("general.architecture", GgufValue::of(std::string("qwen35")));
  md.set("general.name", GgufValue::of(std::string("qwen3.5 tiny random")));
  ModelConfig counted = m;
  if (mtp.empty()) counted.qwen35_layers.mtp_layers = 0;
  const GgufMetadata keys = qwen35_gguf_metadata(counted);
  for (const GgufMetadata::Entry& e : keys.entries())
    if (e.key != "general.architecture") md.set(e.key, e.value);
  md.set("general.file_type", GgufValue::of(uint32_t(32)));
  for (const GgufMetadata::Entry& e : extra.entries()) md.set(e.key, e.value);
  std::vector<GgufTensorSpec> specs;
  std::vector<std::vector<float>> values;
  auto add = [&](const std::string& name, const std::vector<int64_t>& shape, std::vector<float> v) {
    std::vector<uint64_t> ne;
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) ne.push_back(uint64_t(*it));
    const bool f32 =
        ne.size() == 1 || name.ends_with("_norm.weight") || name.ends_with("ssm_conv1d.weight");
    specs.push_back({name, f32 ? GgmlType::f32 : GgmlType::bf16, ne});
    values.push_back(std::move(v));
  };
  for (const NamedTensor& t : w) {
    std::vector<float> v = qwen35_to_gguf(t.name, t.shape, t.values, m);
    if (foreign_ssm_a && t.name.ends_with(".A_log"))
      v = random_floats(v.size(), values.size(), -8.0f, -0.3f);
    add(*qwen35_gguf_tensor_name(t.name), t.shape, std::move(v));
  }
  for (const NamedTensor& t : mtp) {
    std::vector<float> v = t.values;
    // Qwen3NextModel.modify_tensors: + 1 where the renamed tensor's name ends in norm.weight.
    if (qwen35_mtp_converter_name(t.name, m.layers).ends_with("norm.weight"))
      for (float& x : v) x += 1.0f;
    add(qwen35_mtp_gguf_name(t.name, m.layers), t.shape, std::move(v));
  }
  GgufWriter out(path, md, specs);
  for (const auto& v : values) out.write(std::span<const float>(v));
  out.commit();
}

// A checkpoint read as a session reads it: the model, each parameter's values, the extras, a
// GGUF file's tokenizer keys.
struct Qwen35Loaded {
  ModelConfig m;
  std::vector<TensorSpec> specs;  // the graph's parameters
  std::vector<std::vector<float>> values;
  Qwen35FileExtras extras;
  GgufMetadata tokenizer = GgufMetadata("tokenizer");

  const std::vector<float>& value(const std::string& name) const {
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (specs[i].name == name) return values[i];
    throw std::logic_error("no parameter " + name);
  }
};

inline Qwen35Loaded load_qwen35(const std::filesystem::path& path) {
  Qwen35Loaded l;
  l.m = checkpoint_model(path, std::nullopt);
  const WeightFiles files = WeightFiles::open(path);
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 8;
  const Graph g = build_model(l.m, shape);
  for (TensorId id : g.parameters) l.specs.push_back({g.tensor(id).name, g.tensor(id).shape});
  const auto matched = match_model_parameters(files.header(), l.specs, l.m);
  for (const SafetensorsEntry* e : matched) {
    l.values.emplace_back(e->elements());
    files.read(*e, 0, l.values.back());
  }
  l.extras = read_qwen35_extras(files, l.m);
  if (files.gguf()) l.tokenizer = gguf_tokenizer_metadata(files.gguf()->file().metadata());
  return l;
}

// What a session's save writes (runtime/session_files.cpp does the same from the device).
inline void save_qwen35_folder(const Qwen35Loaded& l, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  write_qwen35_safetensors(dir / "model.safetensors", l.m, l.specs, &l.extras,
                           [&](std::size_t i, SafetensorsWriter& w) { w.write(l.values[i]); });
  write_file_atomically(dir / "config.json",
                        hf_config_json(qwen35_saved_model(l.m, l.extras.has_mtp())));
}

inline void save_qwen35_gguf(const Qwen35Loaded& l, const std::filesystem::path& path) {
  GgufModelOptions o;
  o.matrix_type = GgmlType::bf16;
  o.name = "qwen3.5 tiny random";
  o.extra = l.tokenizer;
  add_qwen35_gguf_extras(o, l.extras, l.m, [&](const std::string& name) { return l.value(name); });
  std::vector<GgufSourceTensor> sources;
  for (const TensorSpec& s : l.specs) sources.push_back({s.name, s.shape});
  write_gguf_model(
      path, l.m, sources,
      [&](std::size_t i, uint64_t first, std::span<float> out) {
        std::copy_n(l.values[i].begin() + std::ptrdiff_t(first), out.size(), out.begin());
      },
      o);
}

// A file's tensors by name: dtype (or ggml type), shape, bytes as stored.
using Qwen35Raw =
    std::map<std::string, std::tuple<std::string, std::vector<int64_t>, std::vector<std::byte>>>;

// Every tensor of a safetensors file: dtype, shape, bytes.
inline Qwen35Raw safetensors_raw(const std::filesystem::path& path) {
  const std::vector<std::byte> bytes = read_bytes(path);
  const SafetensorsSource src = SafetensorsSource::open(path);
  Qwen35Raw out;
  for (const SafetensorsEntry& e : src.header().tensors) {
    const auto* at = bytes.data() + src.header().data_offset;
    out[e.name] = {e.dtype, e.shape, std::vector<std::byte>(at + e.begin, at + e.end)};
  }
  return out;
}

// Every tensor of a GGUF file: type, dimensions, bytes.
inline Qwen35Raw gguf_raw(const std::filesystem::path& path) {
  const GgufFile f = GgufFile::open(path);
  Qwen35Raw out;
  for (const GgufTensor& t : f.tensors()) {
    std::vector<std::byte> b(t.bytes);
    f.read(t, 0, b);
    out[t.name] = {std::string(ggml_type_info(t.type).name), t.shape(), b};
  }
  return out;
}

// The text model's names of a multimodal file's tensors, its vision tower left out.
inline Qwen35Raw text_names(const Qwen35Raw& raw) {
  Qwen35Raw out;
  for (const auto& [name, t] : raw)
    if (const auto text = qwen35_text_tensor_name(name))
      out[*text] = t;
    else if (name.starts_with("mtp."))
      out[name] = t;
  return out;
}

}  // namespace remat::test
