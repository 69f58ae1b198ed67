#include "formats/qwen35_mtp.h"

#include <array>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "base/half_float.h"
#include "formats/gguf_blocks.h"
#include "formats/gguf_names.h"
#include "formats/gguf_qwen35.h"
#include "formats/gguf_types.h"
#include "formats/gguf_writer.h"

namespace remat {
namespace {

// The MTP tensors outside mtp.layers: {Hugging Face name, the converter's new name after
// model.layers.L., the GGUF name after blk.L.}.
struct Nextn {
  std::string_view hf, renamed, gguf;
};
constexpr std::array kNextn = {
    Nextn{"mtp.fc.weight", "eh_proj.weight", "nextn.eh_proj.weight"},
    Nextn{"mtp.pre_fc_norm_embedding.weight", "enorm.weight", "nextn.enorm.weight"},
    Nextn{"mtp.pre_fc_norm_hidden.weight", "hnorm.weight", "nextn.hnorm.weight"},
    Nextn{"mtp.norm.weight", "shared_head.norm.weight", "nextn.shared_head_norm.weight"},
};
constexpr std::string_view kLayers = "mtp.layers.";

std::string layer_prefix(const char* prefix, int n) {
  return std::string(prefix) + std::to_string(n) + ".";
}

// {i, rest} of a name "mtp.layers.<i>.<rest>"; nullopt for another.
std::optional<std::pair<int, std::string_view>> mtp_layer(std::string_view hf) {
  const auto parts = split_block(hf, kLayers);
  if (!parts || parts->first.size() > 6) return std::nullopt;
  return std::pair<int, std::string_view>{std::stoi(std::string(parts->first)), parts->second};
}

// The name _QwenMtpMixin.filter_tensors gives an mtp.* tensor (model.layers.N.*), which
// modify_tensors then sees; nullopt for a name it leaves alone.
std::optional<std::string> converter_name(std::string_view hf, const ModelConfig& m) {
  for (const Nextn& n : kNextn)
    if (hf == n.hf) return layer_prefix("model.layers.", m.layers) + std::string(n.renamed);
  const auto layer = mtp_layer(hf);
  if (!layer) return std::nullopt;
  return layer_prefix("model.layers.", m.layers + layer->first) + std::string(layer->second);
}

// llama.cpp loads blocks L .. L + nextn_predict_layers - 1 only: an MTP tensor past them, or any
// when the model counts none, would make a file it refuses (a tensor it never asks for).
void check_counted(const NamedTensor& t, const ModelConfig& m) {
  const int counted = m.qwen35_layers.mtp_layers;
  const auto layer = mtp_layer(t.name);
  if (counted == 0 || (layer && layer->first >= counted))
    throw std::invalid_argument("MTP tensor '" + t.name + "' is past the " +
                                std::to_string(counted) +
                                " MTP layers the model counts (mtp_num_hidden_layers)");
}

// Qwen3NextModel.modify_tensors adds 1 where the new name ends in norm.weight, the gated norm of a
// linear-attention layer aside.
bool gets_one_added(std::string_view hf, const ModelConfig& m) {
  const std::optional<std::string> renamed = converter_name(hf, m);
  return renamed && renamed->ends_with("norm.weight") &&
         !renamed->ends_with("linear_attn.norm.weight");
}

uint64_t count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

// The dtype a GGUF type goes back as, and the type a Hugging Face tensor is written in.
std::string dtype_of(GgmlType t) {
  return t == GgmlType::f16 ? "F16" : t == GgmlType::bf16 ? "BF16" : "F32";
}

GgmlType type_of(const NamedTensor& t) {
  if (t.shape.size() <= 1) return GgmlType::f32;  // base.py: "n_dims <= 1" is F32
  return t.source_dtype == "F16"    ? GgmlType::f16
         : t.source_dtype == "BF16" ? GgmlType::bf16
                                    : GgmlType::f32;
}

std::vector<std::byte> encode(GgmlType type, const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * (type == GgmlType::f32 ? 4 : 2));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (type == GgmlType::f32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = type == GgmlType::f16 ? float_to_f16(v[i]) : float_to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// Whether every value is one of `dtype` (F16 or BF16), so that writing it there changes no bit.
bool holds_exactly(const std::string& dtype, const std::vector<float>& v) {
  for (float x : v) {
    const float back =
        dtype == "F16" ? f16_to_float(float_to_f16(x)) : bf16_to_float(float_to_bf16(x));
    if (std::memcmp(&back, &x, sizeof x) != 0) return false;
  }
  return true;
}

// The dtype `dtypes` lists for `gguf_name`, if any.
std::optional<std::string> listed_dtype(const std::vector<std::string>& dtypes,
                                        const std::string& gguf_name) {
  for (const std::string& e : dtypes)
    if (e.size() > gguf_name.size() && e.starts_with(gguf_name) && e[gguf_name.size()] == '=')
      return e.substr(gguf_name.size() + 1);
  return std::nullopt;
}

// The Hugging Face dtype of a tensor read from GGUF: its type's, or for an f32 tensor the dtype
// the file lists for it when the values are all of that dtype.
std::string dtype_back(const GgufRawTensor& t, const std::vector<float>& values,
                       const std::vector<std::string>& dtypes) {
  const std::string own = dtype_of(t.spec.type);
  if (t.spec.type != GgmlType::f32) return own;
  const std::optional<std::string> listed = listed_dtype(dtypes, t.spec.name);
  if (listed && (*listed == "F16" || *listed == "BF16") && holds_exactly(*listed, values))
    return *listed;
  return own;
}

}  // namespace

std::optional<std::string> qwen35_mtp_gguf_name(std::string_view hf_name, const ModelConfig& m) {
  for (const Nextn& n : kNextn)
    if (hf_name == n.hf) return layer_prefix("blk.", m.layers) + std::string(n.gguf);
  const std::optional<std::string> renamed = converter_name(hf_name, m);
  return renamed ? qwen35_gguf_tensor_name(*renamed) : std::nullopt;
}

std::optional<std::string> qwen35_mtp_hf_name(std::string_view gguf_name, const ModelConfig& m) {
  const auto parts = split_block(gguf_name, "blk.");
  if (!parts || parts->first.size() > 6) return std::nullopt;
  const int block = std::stoi(std::string(parts->first));
  if (block < m.layers) return std::nullopt;
  if (parts->second.starts_with("nextn.")) {
    for (const Nextn& n : kNextn)
      if (block == m.layers && parts->second == n.gguf) return std::string(n.hf);
    return std::nullopt;
  }
  const std::optional<std::string> hf = qwen35_hf_tensor_name(gguf_name);
  if (!hf) return std::nullopt;
  const std::string prefix = layer_prefix("model.layers.", block);
  return layer_prefix("mtp.layers.", block - m.layers) + hf->substr(prefix.size());
}

void check_qwen35_mtp_to_gguf(const std::vector<NamedTensor>& mtp, const ModelConfig& m) {
  for (const NamedTensor& t : mtp) {
    if (!qwen35_mtp_gguf_name(t.name, m))
      throw std::invalid_argument("MTP tensor '" + t.name +
                                  "' has no GGUF name (llama.cpp's converter maps mtp.fc, "
                                  "mtp.pre_fc_norm_*, mtp.norm and mtp.layers.N.*)");
    check_counted(t, m);
    if (t.shape.empty() || t.shape.size() > 4 || count(t.shape) != t.values.size())
      throw std::invalid_argument("MTP tensor '" + t.name + "': its shape does not hold its " +
                                  std::to_string(t.values.size()) + " values");
  }
}

void check_qwen35_mtp_from_gguf(const std::vector<GgufRawTensor>& gguf, const ModelConfig& m) {
  for (const GgufRawTensor& t : gguf) {
    if (!qwen35_mtp_hf_name(t.spec.name, m))
      throw std::invalid_argument("GGUF MTP tensor '" + t.spec.name +
                                  "' has no Hugging Face name; save the model as GGUF to keep it");
    if (!ggml_type_info(t.spec.type).supported)
      throw std::invalid_argument("GGUF MTP tensor '" + t.spec.name + "' is of type " +
                                  std::string(ggml_type_info(t.spec.type).name) +
                                  ", which remat cannot decode");
  }
}

std::vector<GgufRawTensor> qwen35_mtp_to_gguf(const std::vector<NamedTensor>& mtp,
                                              const ModelConfig& m,
                                              std::vector<std::string>& dtypes) {
  check_qwen35_mtp_to_gguf(mtp, m);
  std::vector<GgufRawTensor> out;
  for (const NamedTensor& t : mtp) {
    const std::string name = *qwen35_mtp_gguf_name(t.name, m);
    std::vector<float> v = t.values;
    if (gets_one_added(t.name, m))
      for (float& x : v) x += 1.0f;
    const GgmlType type = type_of(t);
    GgufTensorSpec spec{name, type, {}};
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) spec.ne.push_back(uint64_t(*it));
    if ((t.source_dtype == "F16" || t.source_dtype == "BF16") && t.source_dtype != dtype_of(type))
      dtypes.push_back(name + "=" + t.source_dtype);
    out.push_back({std::move(spec), encode(type, v)});
  }
  return out;
}

std::vector<NamedTensor> qwen35_mtp_from_gguf(const std::vector<GgufRawTensor>& gguf,
                                              const ModelConfig& m,
                                              const std::vector<std::string>& dtypes) {
  check_qwen35_mtp_from_gguf(gguf, m);
  std::vector<NamedTensor> out;
  for (const GgufRawTensor& t : gguf) {
    NamedTensor n{*qwen35_mtp_hf_name(t.spec.name, m), {}, {}, "F32"};
    for (auto it = t.spec.ne.rbegin(); it != t.spec.ne.rend(); ++it)
      n.shape.push_back(int64_t(*it));
    n.values.resize(count(n.shape));
    decode_blocks(t.spec.type, t.bytes, n.values);
    if (gets_one_added(n.name, m))
      for (float& x : n.values) x -= 1.0f;
    n.source_dtype = dtype_back(t, n.values, dtypes);
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace remat
