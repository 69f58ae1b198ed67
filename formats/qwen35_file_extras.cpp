#include "formats/qwen35_file_extras.h"

#include <cstring>
#include <optional>
#include <stdexcept>

#include "formats/gguf_qwen35.h"
#include "formats/model_metadata.h"
#include "formats/qwen35_mtp.h"

namespace remat {
namespace {

bool is_mtp(const std::string& name) {
  return name.starts_with("mtp.");
}

void read_safetensors_extras(const WeightFiles& files, Qwen35FileExtras& x) {
  for (const SafetensorsEntry& e : files.header().tensors) {
    if (is_mtp(e.name)) {
      NamedTensor t{e.name, e.shape, std::vector<float>(e.elements()), e.dtype};
      files.read(e, 0, t.values);
      x.mtp.push_back(std::move(t));
    } else if (const std::optional<std::string> name = qwen35_text_tensor_name(e.name)) {
      x.dtypes[*name] = e.dtype;
    }
  }
}

GgufRawTensor raw_of(const GgufFile& f, const GgufTensor& t) {
  GgufRawTensor r{{t.name, t.type, t.ne}, std::vector<std::byte>(t.bytes)};
  f.read(t, 0, r.bytes);
  return r;
}

void read_gguf_extras(const WeightFiles& files, const ModelConfig& m, Qwen35FileExtras& x) {
  const GgufFile& f = files.gguf()->file();
  for (const GgufTensor& t : f.tensors())
    if (!qwen35_trunk_tensor(t.name, m)) x.gguf_mtp.push_back(raw_of(f, t));
  if (!x.gguf_mtp.empty())
    x.gguf_mtp_dtypes =
        f.metadata().strings(kQwen35MtpDtypesKey).value_or(std::vector<std::string>{});
  for (const SafetensorsEntry& e : files.header().tensors) {
    if (!e.name.ends_with(".linear_attn.A_log")) continue;
    Qwen35FileExtras::StoredSsmA s{e.name, std::vector<float>(e.elements()), {}};
    files.read(e, 0, s.loaded);
    s.ssm_a = raw_of(f, *f.tensor(*qwen35_gguf_tensor_name(e.name)));
    x.ssm_a.push_back(std::move(s));
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

Qwen35FileExtras read_qwen35_extras(const WeightFiles& files, const ModelConfig& m) {
  if (!m.qwen35) throw std::logic_error("read_qwen35_extras: not a Qwen3.5 model");
  Qwen35FileExtras x;
  if (files.gguf())
    read_gguf_extras(files, m, x);
  else
    read_safetensors_extras(files, x);
  return x;
}

ModelConfig qwen35_saved_model(const ModelConfig& m, bool mtp_written) {
  ModelConfig out = m;
  if (!mtp_written) out.qwen35_layers.mtp_layers = 0;
  return out;
}

std::vector<TensorSpec> qwen35_safetensors_specs(const std::vector<TensorSpec>& params,
                                                 const Qwen35FileExtras* extras,
                                                 const std::vector<NamedTensor>& mtp) {
  std::vector<TensorSpec> specs;
  for (const TensorSpec& p : params) {
    TensorSpec s = p;
    if (p.name.ends_with(".linear_attn.conv1d.weight")) s.shape = qwen35_conv1d_file_shape(p.shape);
    if (extras)
      if (const auto it = extras->dtypes.find(p.name); it != extras->dtypes.end())
        s.dtype = it->second;
    specs.push_back(std::move(s));
  }
  for (const NamedTensor& t : mtp) specs.push_back({t.name, t.shape, t.source_dtype});
  return specs;
}

void write_qwen35_safetensors(
    const std::filesystem::path& path, const ModelConfig& m, const std::vector<TensorSpec>& params,
    const Qwen35FileExtras* extras,
    const std::function<void(std::size_t index, SafetensorsWriter& writer)>& write_param) {
  // A GGUF model's MTP block converted before the file is opened: a block remat cannot name
  // fails the save with nothing written.
  std::vector<NamedTensor> from_gguf;
  if (extras && extras->mtp.empty() && !extras->gguf_mtp.empty())
    from_gguf = qwen35_mtp_from_gguf(extras->gguf_mtp, m, extras->gguf_mtp_dtypes);
  const std::vector<NamedTensor>& mtp = from_gguf.empty() && extras ? extras->mtp : from_gguf;
  SafetensorsWriter writer(path, qwen35_safetensors_specs(params, extras, mtp),
                           model_metadata(qwen35_saved_model(m, !mtp.empty())));
  for (std::size_t i = 0; i < params.size(); ++i) write_param(i, writer);
  for (const NamedTensor& t : mtp) writer.write(t.values);
  writer.commit();
}

void check_qwen35_extras_writable(const Qwen35FileExtras& extras, const ModelConfig& m,
                                  bool as_gguf) {
  if (as_gguf && extras.gguf_mtp.empty()) check_qwen35_mtp_to_gguf(extras.mtp, m);
  if (!as_gguf && extras.mtp.empty()) check_qwen35_mtp_from_gguf(extras.gguf_mtp, m);
}

void add_qwen35_gguf_extras(GgufModelOptions& options, const Qwen35FileExtras& extras,
                            const ModelConfig& m,
                            const std::function<std::vector<float>(const std::string&)>& now) {
  std::vector<std::string> dtypes = extras.gguf_mtp_dtypes;
  for (const GgufRawTensor& t : extras.gguf_mtp) options.raw.push_back(t);
  if (extras.gguf_mtp.empty())
    for (GgufRawTensor& t : qwen35_mtp_to_gguf(extras.mtp, m, dtypes))
      options.raw.push_back(std::move(t));
  if (!dtypes.empty())
    options.extra.set(std::string(kQwen35MtpDtypesKey), GgufValue::array(dtypes));
  for (const Qwen35FileExtras::StoredSsmA& s : extras.ssm_a)
    if (same_bits(now(s.a_log), s.loaded)) options.replaced.emplace_back(s.a_log, s.ssm_a);
}

}  // namespace remat
