// A model as llama.cpp's converter writes it (formats/gguf_model_writer.h): the metadata, each
// parameter's GGUF name and dimensions, and its values streamed in the GGUF layout.
#include "formats/gguf_model_writer.h"

#include <algorithm>
#include <stdexcept>

#include "formats/gguf_qwen35.h"
#include "formats/gguf_rope_freqs.h"

namespace remat {
namespace {

template <class T>
void set(GgufMetadata& md, const std::string& key, T value) {
  md.set(key, GgufValue::of(value));
}

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);
}

}  // namespace

float gguf_gemma3_query_scalar(const ModelConfig& m) {
  // llama.cpp scales queries by this^-1/2 whatever the checkpoint said: by the head size, and for
  // Gemma 3 27B (62 layers) by the width per head (src/models/gemma3.cpp).
  return m.layers == 62 ? float(m.dim / m.heads) : float(m.head_dim());
}

namespace {

void check_gemma3(const ModelConfig& m) {
  const float scalar = gguf_gemma3_query_scalar(m);
  if (m.gemma.query_scalar != scalar)
    throw std::invalid_argument(
        "a Gemma 3 model with query_pre_attn_scalar " + std::to_string(m.gemma.query_scalar) +
        " cannot be written as GGUF: llama.cpp scales its queries as if it were " +
        std::to_string(scalar) + "; use a Hugging Face folder or PEFT adapter instead");
}

void set_gemma3(GgufMetadata& md, const std::string& a, const ModelConfig& m) {
  set(md, a + "attention.sliding_window", u32(m.gemma.sliding_window));
  set(md, a + "attention.sliding_window_pattern", u32(m.gemma.pattern));
  set(md, a + "rope.freq_base_swa", m.gemma.local_rope_theta);
  if (m.gemma.rope_linear != 0.0f) {  // on the global layers only, as llama.cpp applies it
    set(md, a + "rope.scaling.type", std::string("linear"));
    set(md, a + "rope.scaling.factor", m.gemma.rope_linear);
  }
}

}  // namespace

GgufArch gguf_arch_of(const ModelConfig& m) {
  if (m.arch == Architecture::gpt2) return GgufArch::gpt2;
  if (m.qwen35) return GgufArch::qwen35;
  if (m.gemma3) {
    check_gemma3(m);
    return GgufArch::gemma3;
  }
  if (m.qk_norm && m.qkv_bias)
    throw std::invalid_argument(
        "a model with q/k norms and q/k/v biases has no GGUF architecture (qwen3 has no biases)");
  // llama.cpp reads llama3 scaling from rope_freqs in llama models only (src/models/llama.cpp),
  // and the converter writes it for them only.
  if (m.rope_scaling != RopeScaling::none && (m.qk_norm || m.qkv_bias))
    throw std::invalid_argument(
        "a model with llama3 RoPE scaling and q/k norms or q/k/v biases cannot be written as "
        "GGUF (llama.cpp's qwen2 and qwen3 read no rope_freqs); use a Hugging Face folder or "
        "PEFT adapter instead");
  return m.qk_norm ? GgufArch::qwen3 : m.qkv_bias ? GgufArch::qwen2 : GgufArch::llama;
}

uint32_t gguf_file_type(GgmlType matrix_type) {
  switch (matrix_type) {
    case GgmlType::f32:
      return 0;
    case GgmlType::f16:
      return 1;
    case GgmlType::bf16:
      return 32;
    default:
      throw std::invalid_argument("GGUF models are written as f32, f16 or bf16, not " +
                                  std::string(ggml_type_info(matrix_type).name));
  }
}

GgufMetadata gguf_tokenizer_metadata(const GgufMetadata& input) {
  GgufMetadata out("tokenizer metadata");
  for (const GgufMetadata::Entry& e : input.entries())
    if (e.key.starts_with("tokenizer.")) out.set(e.key, e.value);
  return out;
}

void check_gguf_model(const ModelConfig& m, GgmlType matrix_type) {
  gguf_arch_of(m);
  gguf_file_type(matrix_type);
}

namespace {

// Whether `raw` holds a Qwen3.5 MTP block (its tensors are all there is to write of it).
bool writes_mtp(const std::vector<GgufRawTensor>& raw, const ModelConfig& m) {
  for (const GgufRawTensor& t : raw)
    if (!qwen35_trunk_tensor(t.spec.name, m)) return true;
  return false;
}

// qwen35.* as the converter writes them (formats/gguf_qwen35.h), after general.*; the MTP
// layers counted only when their tensors are written.
void set_qwen35(GgufMetadata& md, const ModelConfig& m, const GgufModelOptions& options) {
  ModelConfig written = m;
  if (!writes_mtp(options.raw, m)) written.qwen35_layers.mtp_layers = 0;
  const GgufMetadata keys = qwen35_gguf_metadata(written);
  for (const GgufMetadata::Entry& e : keys.entries())
    if (e.key != "general.architecture") md.set(e.key, e.value);
}

// general.file_type, the quantization version, the caller's extra keys and a tokenizer model.
GgufMetadata finish_metadata(GgufMetadata& md, const GgufModelOptions& options) {
  set(md, "general.file_type", gguf_file_type(options.matrix_type));
  set(md, "general.quantization_version", uint32_t(2));
  for (const GgufMetadata::Entry& e : options.extra.entries()) {
    if (md.contains(e.key))
      throw std::invalid_argument("GGUF metadata: '" + e.key +
                                  "' is the model's own key; it cannot be given as an extra");
    md.set(e.key, e.value);
  }
  if (!md.contains("tokenizer.ggml.model")) set(md, "tokenizer.ggml.model", std::string("none"));
  return md;
}

}  // namespace

GgufMetadata gguf_model_metadata(const ModelConfig& m, const GgufModelOptions& options) {
  check_gguf_model(m, options.matrix_type);
  const GgufArch arch = gguf_arch_of(m);
  const std::string a = std::string(gguf_arch_name(arch)) + ".";
  GgufMetadata md("gguf model");
  set(md, "general.architecture", std::string(gguf_arch_name(arch)));
  set(md, "general.type", std::string("model"));
  set(md, "general.name", options.name);
  if (arch == GgufArch::qwen35) {
    set_qwen35(md, m, options);
    return finish_metadata(md, options);
  }
  set(md, a + "block_count", u32(m.layers));
  set(md, a + "context_length", u32(m.ctx));
  set(md, a + "embedding_length", u32(m.dim));
  set(md, a + "feed_forward_length", u32(m.mlp_width()));
  set(md, a + "attention.head_count", u32(m.heads));
  if (arch == GgufArch::gpt2) {
    set(md, a + "attention.layer_norm_epsilon", 1e-5f);
  } else {
    set(md, a + "attention.head_count_kv", u32(m.kv_head_count()));
    set(md, a + "rope.freq_base", m.rope_theta);
    set(md, a + "attention.layer_norm_rms_epsilon", m.norm_eps);
    set(md, a + "rope.dimension_count", u32(m.head_dim()));
    if (m.head_size != 0 || arch == GgufArch::qwen3 ||
        arch == GgufArch::gemma3) {  // as the converter writes head_dim
      set(md, a + "attention.key_length", u32(m.head_dim()));
      set(md, a + "attention.value_length", u32(m.head_dim()));
    }
    if (arch == GgufArch::gemma3) set_gemma3(md, a, m);
  }
  set(md, a + "vocab_size", u32(m.vocab));
  return finish_metadata(md, options);
}

GgufTensorSpec gguf_tensor_spec(const GgufSourceTensor& t, const ModelConfig& m,
                                GgmlType matrix_type) {
  const GgufArch arch = gguf_arch_of(m);
  const std::optional<std::string> name = gguf_tensor_name(t.name, arch);
  if (!name)
    throw std::invalid_argument("'" + t.name + "' has no GGUF name in a " +
                                std::string(gguf_arch_name(arch)) + " model");
  if (t.shape.empty() || t.shape.size() > 2)
    throw std::invalid_argument("'" + t.name + "' has " + std::to_string(t.shape.size()) +
                                " dimensions; GGUF models hold vectors and matrices");
  for (int64_t d : t.shape)
    if (d <= 0) throw std::invalid_argument("'" + t.name + "' has an empty dimension");
  const GgufLayout layout = gguf_layout(t.name, arch, m.heads, m.kv_head_count());
  GgufTensorSpec s;
  s.name = *name;
  s.type = t.shape.size() == 2 ? matrix_type : GgmlType::f32;
  // The converter keeps SSM_CONV1D in F32 whatever the output type (conversion/base.py).
  if (arch == GgufArch::qwen35 && s.name.ends_with(".ssm_conv1d.weight")) s.type = GgmlType::f32;
  gguf_file_type(s.type);  // refuses other types
  if (t.shape.size() == 1) {
    s.ne = {uint64_t(t.shape[0])};
  } else if (layout.transposed) {
    s.ne = {uint64_t(t.shape[0]), uint64_t(t.shape[1])};
  } else {
    s.ne = {uint64_t(t.shape[1]), uint64_t(t.shape[0])};
  }
  if (layout.transposed && t.shape.size() != 2)
    throw std::invalid_argument("'" + t.name + "' should be a matrix");
  if (layout.rope_heads > 0) try {
      gguf_row_of(0, uint64_t(t.shape[0]), layout.rope_heads);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("'" + t.name + "': " + e.what());
    }
  return s;
}

void write_gguf_values(GgufWriter& out, const std::vector<int64_t>& shape, const GgufLayout& layout,
                       const std::function<void(uint64_t first, std::span<float> out)>& source,
                       const std::function<void(uint64_t floats)>& progress) {
  auto read = [&](uint64_t first, std::span<float> out) {
    source(first, out);
    if (layout.norm_shift != 0.0f)
      for (float& v : out) v += layout.norm_shift;
  };
  uint64_t total = 1;
  for (int64_t d : shape) total *= uint64_t(d);
  uint64_t written = 0;
  auto emit = [&](std::span<const float> values) {
    out.write(values);
    written += values.size();
    if (progress) progress(written);
  };
  if (layout.transposed) {
    // Hugging Face [in, out]; stored row o is column o. A band of stored rows at a time, each
    // band gathered from Hugging Face rows read in pieces.
    const uint64_t in = uint64_t(shape[0]), cols = uint64_t(shape[1]);
    const uint64_t band = std::max<uint64_t>(1, kGgufWritePieceFloats / in);
    const uint64_t rows_per_read = std::max<uint64_t>(1, kGgufWritePieceFloats / cols);
    std::vector<float> stored(std::min(band, cols) * in);
    std::vector<float> piece(std::min(rows_per_read, in) * cols);
    for (uint64_t o0 = 0; o0 < cols; o0 += band) {
      const uint64_t o1 = std::min(cols, o0 + band);
      for (uint64_t i0 = 0; i0 < in; i0 += rows_per_read) {
        const uint64_t i1 = std::min(in, i0 + rows_per_read);
        read(i0 * cols, std::span(piece).first((i1 - i0) * cols));
        for (uint64_t i = i0; i < i1; ++i)
          for (uint64_t o = o0; o < o1; ++o) stored[(o - o0) * in + i] = piece[(i - i0) * cols + o];
      }
      emit(std::span(stored).first((o1 - o0) * in));
    }
    return;
  }
  if (layout.rope_heads > 0) {
    // Rows (elements of a bias) move within their head: one head at a time.
    const uint64_t rows = uint64_t(shape[0]);
    const uint64_t row_len = shape.size() == 2 ? uint64_t(shape[1]) : 1;
    const uint64_t d = rows / uint64_t(layout.rope_heads);
    std::vector<uint64_t> hf_of(d);  // stored row within a head -> Hugging Face row
    for (uint64_t r = 0; r < d; ++r) hf_of[gguf_row_of(r, rows, layout.rope_heads)] = r;
    std::vector<float> head(d * row_len), stored(d * row_len);
    for (uint64_t h = 0; h < uint64_t(layout.rope_heads); ++h) {
      read(h * d * row_len, head);
      for (uint64_t g = 0; g < d; ++g)
        std::copy_n(head.begin() + std::ptrdiff_t(hf_of[g] * row_len), row_len,
                    stored.begin() + std::ptrdiff_t(g * row_len));
      emit(stored);
    }
    return;
  }
  std::vector<float> piece(std::min(total, kGgufWritePieceFloats));
  for (uint64_t at = 0; at < total; at += piece.size()) {
    const std::span<float> p = std::span(piece).first(std::min<uint64_t>(piece.size(), total - at));
    read(at, p);
    emit(p);
  }
}

namespace {

// A qwen35 linear-attention parameter: read whole, transformed as the converter does
// (formats/gguf_qwen35.h), written whole.
void write_qwen35_whole(GgufWriter& out, const GgufSourceTensor& t, const ModelConfig& m,
                        const std::function<void(uint64_t first, std::span<float> out)>& read) {
  uint64_t n = 1;
  for (int64_t d : t.shape) n *= uint64_t(d);
  std::vector<float> v(n);
  for (uint64_t at = 0; at < n; at += kGgufWritePieceFloats)
    read(at, std::span(v).subspan(at, std::min(kGgufWritePieceFloats, n - at)));
  out.write(std::span<const float>(qwen35_to_gguf(t.name, t.shape, std::move(v), m)));
}

const GgufRawTensor* replacement(const GgufModelOptions& options, const std::string& name,
                                 const GgufTensorSpec& spec) {
  for (const auto& [param, raw] : options.replaced) {
    if (param != name) continue;
    if (raw.spec.name != spec.name || raw.spec.ne != spec.ne ||
        raw.bytes.size() != gguf_tensor_bytes(raw.spec))
      throw std::invalid_argument("'" + name + "' cannot be written as the bytes of '" +
                                  raw.spec.name + "': another tensor's name, shape or size");
    return &raw;
  }
  return nullptr;
}

}  // namespace

void write_gguf_model(const std::filesystem::path& path, const ModelConfig& m,
                      const std::vector<GgufSourceTensor>& tensors, const GgufSourceReader& read,
                      const GgufModelOptions& options,
                      const std::function<void(uint64_t floats)>& progress) {
  const GgufMetadata metadata = gguf_model_metadata(m, options);
  // Llama 3's scaling first, where the converter yields it (generate_extra_tensors).
  std::vector<float> rope_freqs;
  if (m.rope_scaling == RopeScaling::llama3)
    rope_freqs = gguf_rope_freqs(m.llama3, m.rope_theta, m.head_dim());
  std::vector<GgufTensorSpec> specs;
  if (!rope_freqs.empty()) specs.push_back({kGgufRopeFreqs, GgmlType::f32, {rope_freqs.size()}});
  std::vector<const GgufRawTensor*> replaced;
  for (const GgufSourceTensor& t : tensors) {
    specs.push_back(gguf_tensor_spec(t, m, options.matrix_type));
    replaced.push_back(replacement(options, t.name, specs.back()));
    if (replaced.back()) specs.back().type = replaced.back()->spec.type;
  }
  for (const GgufRawTensor& r : options.raw) specs.push_back(r.spec);
  const GgufArch arch = gguf_arch_of(m);
  GgufWriter writer(path, metadata, specs);
  if (!rope_freqs.empty()) writer.write(std::span<const float>(rope_freqs));
  uint64_t before = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const GgufSourceTensor& t = tensors[i];
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= uint64_t(d);
    auto read_i = [&](uint64_t first, std::span<float> out) { read(i, first, out); };
    const GgufLayout layout = gguf_layout(t.name, arch, m.heads, m.kv_head_count());
    if (replaced[i])
      writer.write(std::span<const std::byte>(replaced[i]->bytes));
    else if (layout.qwen35_transform)
      write_qwen35_whole(writer, t, m, read_i);
    else
      write_gguf_values(writer, t.shape, layout, read_i, [&](uint64_t floats) {
        if (progress) progress(before + floats);
      });
    before += elements;
    if (progress) progress(before);
  }
  for (const GgufRawTensor& r : options.raw) writer.write(std::span<const std::byte>(r.bytes));
  writer.commit();
}

}  // namespace remat
