#include "formats/gguf_qwen35.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "formats/gguf_names.h"

namespace remat {
namespace {

using Pair = std::pair<std::string_view, std::string_view>;  // {Hugging Face, GGUF}

// Per-block names without "model.layers.N." / "blk.N.": both layer kinds' tensors (a linear
// layer has linear_attn.*, a full one self_attn.*; llama.cpp's loader picks by layer).
constexpr std::array kBlock = {
    Pair{"input_layernorm.weight", "attn_norm.weight"},
    Pair{"post_attention_layernorm.weight", "post_attention_norm.weight"},
    Pair{"self_attn.q_proj.weight", "attn_q.weight"},
    Pair{"self_attn.k_proj.weight", "attn_k.weight"},
    Pair{"self_attn.v_proj.weight", "attn_v.weight"},
    Pair{"self_attn.q_norm.weight", "attn_q_norm.weight"},
    Pair{"self_attn.k_norm.weight", "attn_k_norm.weight"},
    Pair{"self_attn.o_proj.weight", "attn_output.weight"},
    Pair{"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    Pair{"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    Pair{"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    Pair{"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    Pair{"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
    Pair{"linear_attn.dt_bias", "ssm_dt.bias"},
    Pair{"linear_attn.A_log", "ssm_a"},
    Pair{"linear_attn.norm.weight", "ssm_norm.weight"},
    Pair{"linear_attn.out_proj.weight", "ssm_out.weight"},
    Pair{"mlp.gate_proj.weight", "ffn_gate.weight"},
    Pair{"mlp.up_proj.weight", "ffn_up.weight"},
    Pair{"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr std::array kTop = {
    Pair{"model.embed_tokens.weight", "token_embd.weight"},
    Pair{"model.norm.weight", "output_norm.weight"},
    Pair{"lm_head.weight", "output.weight"},
};

std::optional<std::string> map_name(std::string_view name, bool from_hf) {
  for (const Pair& p : kTop)
    if ((from_hf ? p.first : p.second) == name) return std::string(from_hf ? p.second : p.first);
  const auto parts = split_block(name, from_hf ? "model.layers." : "blk.");
  if (!parts) return std::nullopt;
  for (const Pair& p : kBlock)
    if ((from_hf ? p.first : p.second) == parts->second)
      return std::string(from_hf ? "blk." : "model.layers.") + std::string(parts->first) + "." +
             std::string(from_hf ? p.second : p.first);
  return std::nullopt;
}

// The linear layers' head counts, checked against the tensor's shape by the callers.
struct Heads {
  int key_heads, value_heads, key_dim, value_dim;
};

Heads heads_of(const ModelConfig& m) {
  if (!m.qwen35) throw std::invalid_argument("not a Qwen3.5 model");
  const Qwen35Layers& l = m.qwen35_layers;
  return {l.linear_key_heads, l.linear_value_heads, l.linear_key_head_dim, l.linear_value_head_dim};
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Moves the value-head blocks along one axis of a row-major [rows, cols] tensor: along rows
// (axis 0) the rows from `first` on hold value_heads blocks of `block` rows; along columns
// (axis 1) the columns do. `to_gguf` picks the direction.
void permute_heads(std::vector<float>& v, int64_t rows, int64_t cols, int axis, int64_t first,
                   int64_t block, const Heads& h, bool to_gguf) {
  if (h.value_heads == h.key_heads) return;
  const std::vector<float> in = v;
  const int64_t along = axis == 0 ? rows : cols;
  if (first + h.value_heads * block != along)
    throw std::invalid_argument("Qwen3.5 value heads: " + std::to_string(along) +
                                " entries do not end in " + std::to_string(h.value_heads) +
                                " heads of " + std::to_string(block));
  for (int head = 0; head < h.value_heads; ++head) {
    const int to = to_gguf ? qwen35_gguf_value_head(head, h.key_heads, h.value_heads)
                           : qwen35_hf_value_head(head, h.key_heads, h.value_heads);
    for (int64_t e = 0; e < block; ++e) {
      const int64_t src = first + head * block + e, dst = first + to * block + e;
      if (axis == 0)
        std::copy_n(in.begin() + src * cols, cols, v.begin() + dst * cols);
      else
        for (int64_t r = 0; r < rows; ++r) v[r * cols + dst] = in[r * cols + src];
    }
  }
}

// Rows and columns of a tensor of rank 1 to 3 seen as a matrix (conv1d's [channels, 1, kernel]
// as [channels, kernel]; a vector as one column).
std::pair<int64_t, int64_t> matrix_of(const std::vector<int64_t>& shape) {
  if (shape.empty() || shape.size() > 3)
    throw std::invalid_argument("Qwen3.5 tensors have one to three axes");
  return {shape[0], count(shape) / shape[0]};
}

bool zero_centred_norm(std::string_view name) {
  return name.ends_with("norm.weight") && !name.ends_with("linear_attn.norm.weight");
}

void transform(std::string_view name, const std::vector<int64_t>& shape, std::vector<float>& v,
               const ModelConfig& m, bool to_gguf) {
  if (static_cast<int64_t>(v.size()) != count(shape))
    throw std::invalid_argument(std::string(name) + ": " + std::to_string(v.size()) +
                                " values for its shape");
  if (zero_centred_norm(name)) {
    for (float& x : v) x = to_gguf ? x + 1.0f : x - 1.0f;
    return;
  }
  if (name.find("linear_attn.") == std::string_view::npos) return;
  const Heads h = heads_of(m);
  const auto [rows, cols] = matrix_of(shape);
  const int64_t keys = int64_t(h.key_heads) * h.key_dim;
  if (name.ends_with(".in_proj_qkv.weight") || name.ends_with(".conv1d.weight"))
    permute_heads(v, rows, cols, 0, 2 * keys, h.value_dim, h, to_gguf);
  else if (name.ends_with(".in_proj_z.weight"))
    permute_heads(v, rows, cols, 0, 0, h.value_dim, h, to_gguf);
  else if (name.ends_with(".in_proj_a.weight") || name.ends_with(".in_proj_b.weight") ||
           name.ends_with(".dt_bias"))
    permute_heads(v, rows, cols, 0, 0, 1, h, to_gguf);
  else if (name.ends_with(".out_proj.weight"))
    permute_heads(v, rows, cols, 1, 0, h.value_dim, h, to_gguf);
  else if (name.ends_with(".A_log")) {
    // The converter computes -torch.exp in float32; exp and log here go through double, each
    // result rounded once to float.
    if (!to_gguf)
      for (float& x : v) x = static_cast<float>(std::log(-static_cast<double>(x)));
    permute_heads(v, rows, cols, 0, 0, 1, h, to_gguf);
    if (to_gguf)
      for (float& x : v) x = static_cast<float>(-std::exp(static_cast<double>(x)));
  }
}

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);
}

}  // namespace

std::optional<std::string> qwen35_gguf_tensor_name(std::string_view hf_name) {
  return map_name(hf_name, true);
}

std::optional<std::string> qwen35_hf_tensor_name(std::string_view gguf_name) {
  return map_name(gguf_name, false);
}

std::optional<std::string> qwen35_text_tensor_name(std::string_view name) {
  if (name.starts_with("model.visual.") || name.starts_with("mtp.")) return std::nullopt;
  constexpr std::string_view kText = "model.language_model.";
  if (name.starts_with(kText)) return "model." + std::string(name.substr(kText.size()));
  return std::string(name);
}

bool qwen35_trunk_tensor(std::string_view gguf_name, const ModelConfig& m) {
  const auto parts = split_block(gguf_name, "blk.");
  if (!parts) return true;
  return std::string(parts->first).size() < 10 && std::stoi(std::string(parts->first)) < m.layers;
}

std::vector<int64_t> qwen35_conv1d_file_shape(const std::vector<int64_t>& graph_shape) {
  if (graph_shape.size() != 2) throw std::invalid_argument("a conv1d weight has two axes here");
  return {graph_shape[0], 1, graph_shape[1]};
}

namespace {

// Where the value-head rows of a linear-attention matrix start, and how many rows a head has;
// nullopt for a tensor whose rows do not move.
std::optional<std::pair<int64_t, int64_t>> value_rows(std::string_view name, const ModelConfig& m) {
  if (name.find(".linear_attn.") == std::string_view::npos) return std::nullopt;
  const Heads h = heads_of(m);
  if (name.ends_with(".in_proj_qkv.weight") || name.ends_with(".conv1d.weight"))
    return std::pair<int64_t, int64_t>{2 * int64_t(h.key_heads) * h.key_dim, h.value_dim};
  if (name.ends_with(".in_proj_z.weight")) return std::pair<int64_t, int64_t>{0, h.value_dim};
  if (name.ends_with(".in_proj_a.weight") || name.ends_with(".in_proj_b.weight"))
    return std::pair<int64_t, int64_t>{0, 1};
  return std::nullopt;
}

}  // namespace

bool qwen35_moves_rows_only(std::string_view hf_name, const ModelConfig& m) {
  if (value_rows(hf_name, m)) return true;
  const Heads h = heads_of(m);
  return hf_name.ends_with(".linear_attn.out_proj.weight") && h.value_heads == h.key_heads;
}

uint64_t qwen35_gguf_row(std::string_view hf_name, uint64_t hf_row, const ModelConfig& m) {
  const Heads h = heads_of(m);
  const auto rows = value_rows(hf_name, m);
  if (!rows || h.value_heads == h.key_heads || int64_t(hf_row) < rows->first) return hf_row;
  const int64_t at = int64_t(hf_row) - rows->first, head = at / rows->second;
  if (head >= h.value_heads)
    throw std::invalid_argument(std::string(hf_name) + ": row " + std::to_string(hf_row) +
                                " is past its value heads");
  const int to = qwen35_gguf_value_head(int(head), h.key_heads, h.value_heads);
  return uint64_t(rows->first + to * rows->second + at % rows->second);
}

int qwen35_gguf_value_head(int head, int key_heads, int value_heads) {
  const int per_key = value_heads / key_heads;
  return (head % per_key) * key_heads + head / per_key;
}

int qwen35_hf_value_head(int gguf_head, int key_heads, int value_heads) {
  const int per_key = value_heads / key_heads;
  return (gguf_head % key_heads) * per_key + gguf_head / key_heads;
}

std::vector<float> qwen35_to_gguf(std::string_view hf_name, const std::vector<int64_t>& hf_shape,
                                  std::vector<float> values, const ModelConfig& m) {
  transform(hf_name, hf_shape, values, m, true);
  return values;
}

std::vector<float> qwen35_from_gguf(std::string_view hf_name, const std::vector<int64_t>& hf_shape,
                                    std::vector<float> values, const ModelConfig& m) {
  transform(hf_name, hf_shape, values, m, false);
  return values;
}

GgufMetadata qwen35_gguf_metadata(const ModelConfig& m) {
  m.validate();
  if (!m.qwen35) throw std::invalid_argument("qwen35 metadata describes Qwen3.5 models only");
  const Qwen35Layers& l = m.qwen35_layers;
  const std::string a = std::string(kQwen35GgufArch) + ".";
  GgufMetadata md("qwen35 metadata");
  md.set("general.architecture", GgufValue::of(std::string(kQwen35GgufArch)));
  md.set(a + "block_count", GgufValue::of(u32(m.layers + l.mtp_layers)));
  if (l.mtp_layers > 0) md.set(a + "nextn_predict_layers", GgufValue::of(u32(l.mtp_layers)));
  md.set(a + "context_length", GgufValue::of(u32(m.ctx)));
  md.set(a + "embedding_length", GgufValue::of(u32(m.dim)));
  md.set(a + "feed_forward_length", GgufValue::of(u32(m.mlp_width())));
  md.set(a + "attention.head_count", GgufValue::of(u32(m.heads)));
  md.set(a + "attention.head_count_kv", GgufValue::of(u32(m.kv_head_count())));
  md.set(a + "rope.freq_base", GgufValue::of(m.rope_theta));
  md.set(a + "attention.layer_norm_rms_epsilon", GgufValue::of(m.norm_eps));
  md.set(a + "attention.key_length", GgufValue::of(u32(m.head_dim())));
  md.set(a + "attention.value_length", GgufValue::of(u32(m.head_dim())));
  md.set(a + "rope.dimension_count", GgufValue::of(u32(m.rotary_dims())));
  const std::vector<int32_t> sections = {l.mrope_section[0], l.mrope_section[1], l.mrope_section[2],
                                         0};
  md.set(a + "rope.dimension_sections", GgufValue::array(sections));
  md.set(a + "ssm.conv_kernel", GgufValue::of(u32(l.conv_kernel)));
  md.set(a + "ssm.state_size", GgufValue::of(u32(l.linear_key_head_dim)));
  md.set(a + "ssm.group_count", GgufValue::of(u32(l.linear_key_heads)));
  md.set(a + "ssm.time_step_rank", GgufValue::of(u32(l.linear_value_heads)));
  md.set(a + "ssm.inner_size", GgufValue::of(u32(l.linear_value_heads * l.linear_value_head_dim)));
  md.set(a + "full_attention_interval", GgufValue::of(u32(l.full_attention_interval)));
  md.set(a + "vocab_size", GgufValue::of(u32(m.vocab)));
  return md;
}

namespace {

int need(const GgufMetadata& md, const std::string& key) {
  const std::optional<uint64_t> v = md.uint(key);
  if (!v || *v == 0 || *v > 1u << 30)
    throw std::invalid_argument("GGUF metadata '" + key + "' must be a positive integer");
  return static_cast<int>(*v);
}

// attention.recurrent_layers (one bool per layer, llama.cpp's alternative to the interval) or
// full_attention_interval (llama.cpp's default 4).
int interval_of(const GgufMetadata& md, const std::string& a, int layers) {
  const GgufValue* recurrent = md.find(a + "attention.recurrent_layers");
  if (!recurrent)
    return md.uint(a + "full_attention_interval") ? need(md, a + "full_attention_interval") : 4;
  int interval = layers + 1;
  for (int i = 0; i < layers && interval == layers + 1; ++i)
    if (recurrent->as_bool(i) == false) interval = i + 1;
  for (int i = 0; i < layers; ++i)
    if (recurrent->as_bool(i) != std::optional<bool>((i + 1) % interval != 0))
      throw std::invalid_argument("GGUF metadata '" + a +
                                  "attention.recurrent_layers' is not every N-th layer full "
                                  "attention, the only layout remat keeps");
  return interval;
}

}  // namespace

ModelConfig qwen35_model_config(const GgufMetadata& md, int vocab) {
  const std::string a = std::string(kQwen35GgufArch) + ".";
  ModelConfig m;
  m.arch = Architecture::llama;
  m.qwen35 = true;
  m.qk_norm = true;
  Qwen35Layers& l = m.qwen35_layers;
  l.mtp_layers = static_cast<int>(md.uint(a + "nextn_predict_layers").value_or(0));
  m.layers = need(md, a + "block_count") - l.mtp_layers;
  if (m.layers <= 0)
    throw std::invalid_argument("GGUF metadata: nextn_predict_layers leaves no trunk layers");
  m.ctx = need(md, a + "context_length");
  m.dim = need(md, a + "embedding_length");
  m.ffn = need(md, a + "feed_forward_length");
  m.heads = need(md, a + "attention.head_count");
  m.kv_heads = need(md, a + "attention.head_count_kv");
  const int head_dim = need(md, a + "attention.key_length");
  m.head_size = m.dim % m.heads == 0 && head_dim == m.dim / m.heads ? 0 : head_dim;
  m.rope_theta = static_cast<float>(md.number(a + "rope.freq_base").value_or(10000.0));
  m.norm_eps = static_cast<float>(md.number(a + "attention.layer_norm_rms_epsilon").value_or(1e-6));
  m.vocab = md.uint(a + "vocab_size") ? need(md, a + "vocab_size") : vocab;
  m.tied_head = false;  // the caller sets it: tied iff the file has no output.weight
  l.partial_rotary = static_cast<float>(need(md, a + "rope.dimension_count")) / head_dim;
  if (const auto s = md.int32s(a + "rope.dimension_sections")) {
    if (s->size() != 4 || (*s)[3] != 0)
      throw std::invalid_argument("GGUF metadata '" + a +
                                  "rope.dimension_sections' must hold three sections and a 0");
    l.mrope_section = {(*s)[0], (*s)[1], (*s)[2]};
  } else {
    l.mrope_section = {11, 11, 10};  // the converter's default (_Qwen35MRopeMixin)
  }
  l.mrope_interleaved = true;  // llama.cpp's qwen35 always rotates interleaved (imrope)
  l.conv_kernel = need(md, a + "ssm.conv_kernel");
  l.linear_key_head_dim = need(md, a + "ssm.state_size");
  l.linear_key_heads = need(md, a + "ssm.group_count");
  l.linear_value_heads = need(md, a + "ssm.time_step_rank");
  // The value heads' size is inner_size / time_step_rank, as llama.cpp's qwen35 graph takes it
  // (src/models/qwen35.cpp, head_v_dim = d_inner / num_v_heads); state_size is the key heads'.
  // Its tensor loader sizes them as state_size (head_v_dim = ssm_d_state), so a file whose value
  // heads differ from its key heads, which remat writes, runs in remat but not in llama.cpp.
  const int inner = need(md, a + "ssm.inner_size");
  if (l.linear_value_heads <= 0 || inner % l.linear_value_heads != 0)
    throw std::invalid_argument("GGUF metadata '" + a + "ssm.inner_size' (" +
                                std::to_string(inner) + ") is not a multiple of time_step_rank (" +
                                std::to_string(l.linear_value_heads) + ")");
  l.linear_value_head_dim = inner / l.linear_value_heads;
  l.full_attention_interval = interval_of(md, a, m.layers);
  m.validate();
  return m;
}

}  // namespace remat
