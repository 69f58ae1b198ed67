#include "formats/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/gguf_blocks.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_qwen35.h"
#include "formats/gguf_rope_freqs.h"

namespace remat {
namespace {

[[noreturn]] void fail(const GgufFile& f, const std::string& what) {
  throw std::invalid_argument(f.origin() + ": " + what);
}

uint64_t required_uint(const GgufFile& f, const std::string& key) {
  const std::optional<uint64_t> v = f.metadata().uint(key);
  if (!v) fail(f, "has no '" + key + "'");
  return *v;
}

int required_int(const GgufFile& f, const std::string& key) {
  const uint64_t v = required_uint(f, key);
  if (v == 0 || v > (1u << 30)) fail(f, "'" + key + "' is " + std::to_string(v) + ", out of range");
  return static_cast<int>(v);
}

// attention.key_length (and value_length, which must equal it) when given, else C / heads; RoPE
// must rotate whole heads.
void read_head_size(const GgufFile& f, const std::string& a, ModelConfig& m) {
  const std::optional<uint64_t> key = f.metadata().uint(a + "attention.key_length");
  const std::optional<uint64_t> value = f.metadata().uint(a + "attention.value_length");
  if (value && (!key || *value != *key))
    fail(f, a + "attention.value_length differs from key_length; remat's heads are one size");
  if (key && (*key == 0 || *key > 4096)) fail(f, a + "attention.key_length is out of range");
  if (key && !(m.dim % m.heads == 0 && *key == uint64_t(m.dim / m.heads)))
    m.head_size = static_cast<int>(*key);
  if (m.head_size == 0 && m.dim % m.heads != 0)
    fail(f, std::to_string(m.heads) + " heads do not divide " + a + "embedding_length " +
                std::to_string(m.dim) + " and there is no " + a + "attention.key_length");
  const uint64_t d = static_cast<uint64_t>(m.head_dim());
  if (const std::optional<uint64_t> rot = f.metadata().uint(a + "rope.dimension_count");
      rot && *rot != d)
    fail(f, a + "rope.dimension_count is " + std::to_string(*rot) +
                "; remat rotates whole heads of " + std::to_string(d));
}

// Gemma 3's layers as llama.cpp reads them (src/models/gemma3.cpp): a window and a period when
// attention.sliding_window is positive (the period 6 when absent), else all layers global; the
// local RoPE base rope.freq_base_swa (10000 when absent); linear scaling on the global layers;
// queries scaled by gguf_gemma3_query_scalar.
void read_gemma3(const GgufFile& f, const std::string& a, ModelConfig& m) {
  m.gemma3 = true;
  if (f.tensor("output.weight")) fail(f, "has an untied 'output.weight'; remat's Gemma 3 is tied");
  if (const std::optional<double> cap = f.metadata().number(a + "final_logit_softcapping");
      cap && *cap != 0.0)
    fail(f, a + "final_logit_softcapping is set; remat's Gemma 3 has no logit softcapping");
  const uint64_t window = f.metadata().uint(a + "attention.sliding_window").value_or(0);
  if (window > (1u << 30)) fail(f, a + "attention.sliding_window is out of range");
  m.gemma.sliding_window = window > 0 ? int(window) : m.ctx;
  m.gemma.pattern = 1;  // every layer global
  const std::string pattern = a + "attention.sliding_window_pattern";
  if (window > 0 && f.metadata().contains(pattern)) {
    // uint() refuses another type by name (llama.cpp's per-layer array among them).
    const std::optional<uint64_t> p = f.metadata().uint(pattern);
    if (*p > (1u << 30)) fail(f, pattern + " is out of range");
    // llama.cpp's period 0 makes every layer local: a period past the last layer.
    m.gemma.pattern = *p == 0 ? m.layers + 1 : int(*p);
  } else if (window > 0) {
    m.gemma.pattern = 6;
  }
  m.gemma.local_rope_theta =
      static_cast<float>(f.metadata().number(a + "rope.freq_base_swa").value_or(10000.0));
  const std::string type = f.metadata().string(a + "rope.scaling.type").value_or("none");
  const double factor = f.metadata().number(a + "rope.scaling.factor").value_or(0.0);
  if (type == "linear" && factor != 0.0 && factor != 1.0)
    m.gemma.rope_linear = static_cast<float>(factor);
  else if (type != "linear" && type != "none")
    fail(f, a + "rope.scaling.type is '" + type + "'; remat's Gemma 3 scales RoPE linearly only");
  m.gemma.query_scalar = gguf_gemma3_query_scalar(m);
}

// Llama 3's scaling as the converter stores it (formats/gguf_rope_freqs.h): F32 factors, one per
// frequency of a head, in llama models (llama.cpp's qwen2, qwen3 and gemma3 read none).
void read_rope_freqs(const GgufFile& f, GgufArch arch, const GgufTensor& t, ModelConfig& m) {
  const std::string name = kGgufRopeFreqs;
  if (arch != GgufArch::llama)
    fail(f, "has '" + name + "' in a " + std::string(gguf_arch_name(arch)) +
                " model; llama.cpp and remat read Llama 3's RoPE scaling in llama models only");
  const uint64_t n = uint64_t(m.head_dim() / 2);
  if (t.type != GgmlType::f32 || t.ne.size() != 1 || t.ne[0] != n)
    fail(f, "'" + name + "' is not " + std::to_string(n) + " F32 values (a head's frequencies)");
  std::vector<float> v(n);
  f.read(t, 0, std::as_writable_bytes(std::span(v)));
  try {
    m.llama3 = llama3_scaling_of_rope_freqs(v, m.rope_theta, m.head_dim());
  } catch (const std::invalid_argument& e) {
    fail(f, e.what());
  }
  m.rope_scaling = m.llama3.factor == 0.0f ? RopeScaling::none : RopeScaling::llama3;
}

GgufArch architecture(const GgufFile& f) {
  const std::optional<std::string> name = f.metadata().string("general.architecture");
  if (!name) fail(f, "has no 'general.architecture'");
  const std::optional<GgufArch> arch = gguf_arch(*name);
  if (!arch)
    fail(f, "general.architecture is '" + *name +
                "'; remat reads llama, qwen2, qwen3, gemma3, qwen35 and gpt2");
  return *arch;
}

// Qwen3.5 from its qwen35.* keys (formats/gguf_qwen35.h); the vocabulary from token_embd's rows
// unless qwen35.vocab_size says, the head tied when there is no output.weight.
ModelConfig qwen35_config(const GgufFile& f) {
  const GgufTensor* embd = f.tensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2) fail(f, "has no two-dimensional tensor 'token_embd.weight'");
  if (embd->ne[1] > (1u << 30)) fail(f, "token_embd.weight has too many rows");
  try {
    ModelConfig m = qwen35_model_config(f.metadata(), static_cast<int>(embd->ne[1]));
    m.tied_head = f.tensor("output.weight") == nullptr;
    if (embd->ne[0] != uint64_t(m.dim) || embd->ne[1] != uint64_t(m.vocab))
      fail(f, "token_embd.weight is not [" + std::to_string(m.vocab) + ", " +
                  std::to_string(m.dim) + "] as the qwen35 keys say");
    m.validate();
    return m;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.starts_with(f.origin() + ":")) throw;
    fail(f, what);
  }
}

// The values of a qwen35 linear-attention tensor read whole, as Hugging Face holds them.
std::vector<float> qwen35_whole(const GgufFile& f, const GgufTensor& t, const SafetensorsEntry& e,
                                const ModelConfig& m) {
  std::vector<std::byte> bytes(t.bytes);
  f.read(t, 0, bytes);
  std::vector<float> v(t.elements());
  decode_blocks(t.type, bytes, v);
  try {
    return qwen35_from_gguf(e.name, e.shape, std::move(v), m);
  } catch (const std::invalid_argument& x) {
    fail(f, "tensor '" + t.name + "': " + x.what());
  }
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const GgufArch arch = architecture(f);
  if (arch == GgufArch::qwen35) return qwen35_config(f);
  const std::string a = std::string(gguf_arch_name(arch)) + ".";
  ModelConfig m;
  m.arch = arch == GgufArch::gpt2 ? Architecture::gpt2 : Architecture::llama;
  m.layers = required_int(f, a + "block_count");
  m.dim = required_int(f, a + "embedding_length");
  m.heads = required_int(f, a + "attention.head_count");
  m.ctx = required_int(f, a + "context_length");
  const int ffn = required_int(f, a + "feed_forward_length");
  const GgufTensor* embd = f.tensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2) fail(f, "has no two-dimensional tensor 'token_embd.weight'");
  if (embd->ne[0] != static_cast<uint64_t>(m.dim))
    fail(f, "token_embd.weight has rows of " + std::to_string(embd->ne[0]) + ", not " + a +
                "embedding_length " + std::to_string(m.dim));
  m.vocab = static_cast<int>(embd->ne[1]);
  if (arch == GgufArch::gpt2) {
    if (ffn != 4 * m.dim)
      fail(f, a + "feed_forward_length is " + std::to_string(ffn) + "; gpt2 has 4 x " +
                  std::to_string(m.dim));
    if (const std::optional<double> eps = f.metadata().number(a + "attention.layer_norm_epsilon");
        eps && static_cast<float>(*eps) != 1e-5f)
      fail(f, a + "attention.layer_norm_epsilon is " + std::to_string(*eps) +
                  "; remat's gpt2 uses 1e-5");
    if (f.tensor("output.weight")) fail(f, "has an untied 'output.weight'; gpt2's head is tied");
  } else {
    m.ffn = ffn;
    m.kv_heads = required_int(f, a + "attention.head_count_kv");
    const std::optional<double> eps = f.metadata().number(a + "attention.layer_norm_rms_epsilon");
    if (!eps) fail(f, "has no '" + a + "attention.layer_norm_rms_epsilon'");
    m.norm_eps = static_cast<float>(*eps);
    m.rope_theta = static_cast<float>(f.metadata().number(a + "rope.freq_base").value_or(10000.0));
    read_head_size(f, a, m);
    m.tied_head = f.tensor("output.weight") == nullptr;
    m.qkv_bias = f.tensor("blk.0.attn_q.bias") != nullptr;
    m.qk_norm = arch == GgufArch::qwen3 || arch == GgufArch::gemma3;
    if (m.qk_norm && m.qkv_bias)
      fail(f, "is a " + std::string(gguf_arch_name(arch)) + " model with q/k/v biases");
    if (arch == GgufArch::gemma3) read_gemma3(f, a, m);
    if (const GgufTensor* t = f.tensor(kGgufRopeFreqs)) read_rope_freqs(f, arch, *t, m);
  }
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    fail(f, e.what());
  }
  return m;
}

GgufWeights::GgufWeights(GgufFile file) : file_(std::move(file)), model_(gguf_model_config(file_)) {
  file_.check_supported();
  const GgufArch arch = architecture(file_);
  for (const GgufTensor& t : file_.tensors()) {
    const std::optional<std::string> name = hf_tensor_name(t.name, arch);
    if (!name) continue;  // rope_freqs and the like: no parameter of remat's
    if (arch == GgufArch::qwen35 && !qwen35_trunk_tensor(t.name, model_)) continue;
    if (t.ne.size() > 2) fail(file_, "tensor '" + t.name + "' has more than two dimensions");
    const GgufLayout layout = gguf_layout(*name, arch, model_.heads, model_.kv_head_count());
    SafetensorsEntry e;
    e.name = *name;
    e.dtype = std::string(ggml_type_info(t.type).name);
    e.shape = t.shape();
    if (layout.transposed) {
      if (e.shape.size() != 2) fail(file_, "tensor '" + t.name + "' should be a matrix");
      std::swap(e.shape[0], e.shape[1]);
    }
    if (layout.rope_heads > 0)  // checks that the rows split into heads of an even size
      gguf_row_of(0, t.ne.size() == 1 ? t.ne[0] : t.rows(), layout.rope_heads);
    header_.tensors.push_back(std::move(e));
    sources_.push_back({&t, layout});
  }
}

const GgufTensor* GgufWeights::first_quantized() const {
  for (const Source& s : sources_)
    if (ggml_type_info(s.tensor->type).block_values > 1) return s.tensor;
  return nullptr;
}

void GgufWeights::read_row(const GgufTensor& t, uint64_t row, std::span<float> out) const {
  const uint64_t bytes = ggml_row_bytes(t.type, t.ne[0]);
  row_bytes_.resize(bytes);
  file_.read(t, row * bytes, row_bytes_);
  decode_blocks(t.type, row_bytes_, out);
}

const GgufWeights::Source& GgufWeights::source_of(const SafetensorsEntry& e,
                                                  const char* what) const {
  const SafetensorsEntry* begin = header_.tensors.data();
  if (&e < begin || &e >= begin + header_.tensors.size())
    throw std::logic_error(std::string(what) + ": '" + e.name + "' is not a tensor of " +
                           file_.origin());
  return sources_[static_cast<std::size_t>(&e - begin)];
}

std::vector<BlockWeight> GgufWeights::block_weights() const {
  std::vector<BlockWeight> out;
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    const GgufTensor& t = *sources_[i].tensor;
    const GgmlTypeInfo& info = ggml_type_info(t.type);
    // A qwen35 linear-attention matrix keeps its blocks where the converter moved whole rows
    // only (read_blocks puts them back); other transforms change values or split rows.
    if (info.block_values <= 1 || t.ne.size() != 2 || sources_[i].layout.norm_shift != 0.0f ||
        (sources_[i].layout.qwen35_transform &&
         !qwen35_moves_rows_only(header_.tensors[i].name, model_)))
      continue;
    out.push_back({header_.tensors[i].name,
                   {static_cast<uint32_t>(t.type), info.block_values, info.block_bytes,
                    std::string(info.name)}});
  }
  return out;
}

void GgufWeights::read_blocks(const SafetensorsEntry& e, uint64_t offset,
                              std::span<std::byte> out) const {
  const Source& s = source_of(e, "GgufWeights::read_blocks");
  const GgufTensor& t = *s.tensor;
  const uint64_t row_bytes = ggml_row_bytes(t.type, t.ne[0]);
  if (t.ne.size() != 2 || offset + out.size() > t.rows() * row_bytes)
    throw std::out_of_range("GgufWeights::read_blocks: not the blocks of '" + e.name + "'");
  uint64_t done = 0;
  while (done < out.size()) {
    const uint64_t at = offset + done, row = at / row_bytes, col = at % row_bytes;
    const uint64_t n = std::min<uint64_t>(row_bytes - col, out.size() - done);
    const uint64_t stored = s.layout.qwen35_transform
                                ? qwen35_gguf_row(e.name, row, model_)
                                : gguf_row_of(row, t.rows(), s.layout.rope_heads);
    file_.read(t, stored * row_bytes + col, out.subspan(done, n));
    done += n;
  }
}

void GgufWeights::read(const SafetensorsEntry& e, uint64_t first, std::span<float> out) const {
  const Source& s = source_of(e, "GgufWeights::read");
  const GgufTensor& t = *s.tensor;
  if (first + out.size() > t.elements())
    throw std::out_of_range("GgufWeights::read: past the end of '" + e.name + "'");
  const uint64_t row_len = t.ne[0];
  row_values_.resize(row_len);
  if (s.layout.qwen35_transform) {
    // Transformed whole (heads reordered, ssm_a to A_log); kept while reads stay in it.
    const std::size_t index = static_cast<std::size_t>(&s - sources_.data());
    if (whole_of_ != index) {
      whole_ = qwen35_whole(file_, t, e, model_);
      whole_of_ = index;
    }
    std::copy_n(whole_.begin() + std::ptrdiff_t(first), out.size(), out.begin());
  } else if (s.layout.rope_heads > 0 && t.ne.size() == 1) {
    // A permuted bias: its elements move as the weight's rows do.
    read_row(t, 0, row_values_);
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = row_values_[gguf_row_of(first + i, row_len, s.layout.rope_heads)];
  } else if (!s.layout.transposed) {
    // Hugging Face rows are stored rows (after the RoPE permutation): copy row by row.
    uint64_t done = 0;
    while (done < out.size()) {
      const uint64_t at = first + done, row = at / row_len, col = at % row_len;
      read_row(t, gguf_row_of(row, t.rows(), s.layout.rope_heads), row_values_);
      const uint64_t n = std::min<uint64_t>(row_len - col, out.size() - done);
      std::memcpy(out.data() + done, row_values_.data() + col, n * sizeof(float));
      done += n;
    }
  } else {
    // Hugging Face element (i, o) of an [in, out] matrix is stored row o, column i: each stored
    // row gives one column of the request.
    const uint64_t out_cols = t.rows();  // Hugging Face columns
    const uint64_t first_row = first / out_cols, last_row = (first + out.size() - 1) / out_cols;
    for (uint64_t o = 0; o < out_cols; ++o) {
      read_row(t, o, row_values_);
      for (uint64_t i = first_row; i <= last_row; ++i) {
        const uint64_t at = i * out_cols + o;
        if (at >= first && at < first + out.size()) out[at - first] = row_values_[i];
      }
    }
  }
  // The file's gain g is what it means: remat's offset is g - 1, exact for g in [0.5, 2^24) (1 is
  // a multiple of g's ulp there and g - 1 needs no finer one), so writing it back gives g again.
  // A remat offset w written as fl(1 + w) reads back as fl(1 + w) - 1, w rounded to 2^-24 or so.
  if (s.layout.norm_shift != 0.0f)
    for (float& v : out) v -= s.layout.norm_shift;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i]))
      throw std::invalid_argument(file_.origin() + ": tensor '" + t.name +
                                  "' has a non-finite value at element " +
                                  std::to_string(first + i));
}

std::string full_fine_tune_refusal(const GgufWeights& w, std::string_view fix) {
  const GgufTensor* q = w.first_quantized();
  if (!q) return {};
  return w.file().origin() + ": tensor '" + q->name + "' is " +
         std::string(ggml_type_info(q->type).name) +
         "; a quantized model is fine-tuned with LoRA: " + std::string(fix);
}

}  // namespace remat
