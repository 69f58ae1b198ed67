// Qwen3.5's MTP layers between Hugging Face and GGUF (formats/qwen35_mtp.h): names as llama.cpp's
// converter gives them, + 1 on every norm it adds one to, types, and the way back.
#include "formats/qwen35_mtp.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_blocks.h"
#include "tests/support/qwen35_files.h"

using namespace remat;

namespace {

std::vector<float> floats_of(const GgufRawTensor& t) {
  std::vector<float> v(t.bytes.size() / sizeof(float));
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("MTP tensor names: the converter's both ways", "[qwen35_mtp]") {
  const ModelConfig m = test::tiny_qwen35();  // 4 trunk layers: the MTP block is blk.4
  CHECK(qwen35_mtp_gguf_name("mtp.fc.weight", m) == "blk.4.nextn.eh_proj.weight");
  CHECK(qwen35_mtp_gguf_name("mtp.pre_fc_norm_embedding.weight", m) == "blk.4.nextn.enorm.weight");
  CHECK(qwen35_mtp_gguf_name("mtp.pre_fc_norm_hidden.weight", m) == "blk.4.nextn.hnorm.weight");
  CHECK(qwen35_mtp_gguf_name("mtp.norm.weight", m) == "blk.4.nextn.shared_head_norm.weight");
  CHECK(qwen35_mtp_gguf_name("mtp.layers.0.self_attn.q_proj.weight", m) == "blk.4.attn_q.weight");
  CHECK(qwen35_mtp_gguf_name("mtp.layers.1.mlp.down_proj.weight", m) == "blk.5.ffn_down.weight");
  for (const NamedTensor& t : test::qwen35_mtp_tensors(m, 1)) {
    INFO(t.name);
    const auto gguf = qwen35_mtp_gguf_name(t.name, m);
    REQUIRE(gguf);
    CHECK(*gguf == test::qwen35_mtp_gguf_name(t.name, m.layers));
    CHECK(qwen35_mtp_hf_name(*gguf, m) == t.name);
  }
  CHECK(qwen35_mtp_hf_name("blk.5.attn_k.weight", m) == "mtp.layers.1.self_attn.k_proj.weight");
  // Names the converter never writes, or that are no MTP tensor.
  CHECK_FALSE(qwen35_mtp_gguf_name("mtp.embed_tokens.weight", m));
  CHECK_FALSE(qwen35_mtp_gguf_name("model.layers.0.mlp.up_proj.weight", m));
  CHECK_FALSE(qwen35_mtp_hf_name("blk.4.nextn.embed_tokens.weight", m));
  CHECK_FALSE(qwen35_mtp_hf_name("blk.5.nextn.eh_proj.weight", m));  // nextn.* sit in block L
  CHECK_FALSE(qwen35_mtp_hf_name("blk.3.attn_q.weight", m));         // the trunk's
  CHECK_FALSE(qwen35_mtp_hf_name("output.weight", m));
}

TEST_CASE("MTP tensors to GGUF: the converter's bytes, norms plus one", "[qwen35_mtp]") {
  test::TempFolder d("qwen35_mtp_to_gguf");
  const ModelConfig m = test::tiny_qwen35();
  const auto mtp = test::qwen35_mtp_tensors(m, 2);
  // The converter's file (--outtype bf16, tests/support/qwen35_files.h) of the same tensors.
  test::write_qwen35_gguf(d / "converter.gguf", m, test::qwen35_weights(m, 2), mtp);
  const test::Qwen35Raw converter = test::gguf_raw(d / "converter.gguf");
  std::vector<std::string> dtypes;
  const std::vector<GgufRawTensor> out = qwen35_mtp_to_gguf(mtp, m, dtypes);
  REQUIRE(out.size() == mtp.size());
  int norms = 0;
  for (std::size_t i = 0; i < mtp.size(); ++i) {
    const NamedTensor& t = mtp[i];
    const GgufRawTensor& g = out[i];
    INFO(t.name);
    const auto& [type, shape, bytes] = converter.at(g.spec.name);
    CHECK(g.spec.ne == std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()));
    // Every MTP vector is a norm the converter adds one to (enorm and hnorm too: it renames
    // them to model.layers.L.enorm / .hnorm first), and writes F32.
    if (t.shape.size() == 1) {
      ++norms;
      REQUIRE(g.spec.type == GgmlType::f32);
      const std::vector<float> v = floats_of(g);
      for (std::size_t k = 0; k < v.size(); ++k) CHECK(v[k] == t.values[k] + 1.0f);
    }
    // The source's own type for a matrix (fc F16), the converter's bytes wherever it is bf16.
    CHECK(g.spec.type == (t.shape.size() == 1       ? GgmlType::f32
                          : t.source_dtype == "F16" ? GgmlType::f16
                                                    : GgmlType::bf16));
    if (std::string(ggml_type_info(g.spec.type).name) == type) CHECK(g.bytes == bytes);
  }
  CHECK(norms == 7);  // enorm, hnorm, shared_head_norm, attn/post-attention norms, q/k norms
  // The BF16 vector's dtype, which f32 forgets, is listed; the F16 matrix's is its type's.
  CHECK(dtypes == std::vector<std::string>{"blk.4.nextn.enorm.weight=BF16"});
}

TEST_CASE("MTP tensors from GGUF and back: the same bytes", "[qwen35_mtp]") {
  const ModelConfig m = test::tiny_qwen35();
  std::vector<NamedTensor> mtp = test::qwen35_mtp_tensors(m, 3);
  // Every dtype on both kinds of tensor: an F16 norm, an F32 matrix.
  for (NamedTensor& t : mtp) {
    if (t.name == "mtp.pre_fc_norm_hidden.weight") {
      t.source_dtype = "F16";
      for (float& v : t.values) v = f16_to_float(float_to_f16(v));
    }
    if (t.name == "mtp.norm.weight")  // F32 values no bfloat16 holds, w + 1 exact all the same
      for (std::size_t k = 0; k < t.values.size(); ++k)
        t.values[k] = 0.25f + std::ldexp(float(k % 5 + 1), -12);
    if (t.name == "mtp.layers.0.mlp.up_proj.weight") {
      t.source_dtype = "F32";
      t.values = test::random_floats(t.values.size(), 5, -0.3f, 0.3f);
    }
  }
  std::vector<std::string> dtypes;
  const std::vector<GgufRawTensor> gguf = qwen35_mtp_to_gguf(mtp, m, dtypes);
  CHECK(dtypes.size() == 2);  // the F16 and the BF16 norm
  const std::vector<NamedTensor> back = qwen35_mtp_from_gguf(gguf, m, dtypes);
  REQUIRE(back.size() == mtp.size());
  for (std::size_t i = 0; i < mtp.size(); ++i) {
    INFO(mtp[i].name);
    CHECK(back[i].name == mtp[i].name);
    CHECK(back[i].shape == mtp[i].shape);
    CHECK(back[i].source_dtype == mtp[i].source_dtype);
    CHECK(same_bits(back[i].values, mtp[i].values));
  }
  // Without the key the norms come back as F32, their values the same.
  const std::vector<NamedTensor> unlisted = qwen35_mtp_from_gguf(gguf, m, {});
  for (std::size_t i = 0; i < mtp.size(); ++i) {
    INFO(mtp[i].name);
    CHECK(unlisted[i].source_dtype == (mtp[i].shape.size() == 1 ? "F32" : mtp[i].source_dtype));
    CHECK(same_bits(unlisted[i].values, mtp[i].values));
  }
  // A listed dtype that does not hold the values is not taken.
  std::vector<std::string> wrong = {"blk.4.nextn.shared_head_norm.weight=BF16"};
  for (const NamedTensor& t : qwen35_mtp_from_gguf(gguf, m, wrong))
    if (t.name == "mtp.norm.weight") CHECK(t.source_dtype == "F32");
}

TEST_CASE("a quantized MTP tensor comes back as F32, decoded as ggml does", "[qwen35_mtp]") {
  const ModelConfig m = test::tiny_qwen35();
  // blk.4.nextn.eh_proj [2 * 64, 64] as Q8_0: 4 blocks of 34 bytes a row.
  GgufRawTensor q{{"blk.4.nextn.eh_proj.weight", GgmlType::q8_0, {128, 64}}, {}};
  q.bytes.resize(64 * 4 * 34);
  for (std::size_t b = 0; b < 64 * 4; ++b) {
    const uint16_t d = float_to_f16(0.01f * float(b % 7 + 1));
    std::memcpy(q.bytes.data() + b * 34, &d, 2);
    for (int e = 0; e < 32; ++e) q.bytes[b * 34 + 2 + e] = std::byte(uint8_t(e * 5 - 80));
  }
  const std::vector<NamedTensor> back = qwen35_mtp_from_gguf({q}, m, {});
  REQUIRE(back.size() == 1);
  CHECK(back[0].name == "mtp.fc.weight");
  CHECK(back[0].shape == std::vector<int64_t>{64, 128});
  CHECK(back[0].source_dtype == "F32");
  std::vector<float> expected(64 * 128);
  decode_blocks(GgmlType::q8_0, q.bytes, expected);
  CHECK(same_bits(back[0].values, expected));
}

TEST_CASE("an MTP tensor with no name in the other format is refused by name", "[qwen35_mtp]") {
  const ModelConfig m = test::tiny_qwen35();
  std::vector<std::string> dtypes;
  CHECK_THROWS_WITH(
      qwen35_mtp_to_gguf({{"mtp.embed_tokens.weight", {100, 64}, std::vector<float>(6400), "BF16"}},
                         m, dtypes),
      Catch::Contains("mtp.embed_tokens.weight"));
  CHECK_THROWS_WITH(
      qwen35_mtp_to_gguf({{"mtp.norm.weight", {64}, std::vector<float>(63)}}, m, dtypes),
      Catch::Contains("mtp.norm.weight") && Catch::Contains("shape"));
  // More MTP layers than the model counts: llama.cpp would never ask for the extra block.
  CHECK_THROWS_WITH(
      qwen35_mtp_to_gguf(
          {{"mtp.layers.1.mlp.up_proj.weight", {96, 64}, std::vector<float>(96 * 64), "BF16"}}, m,
          dtypes),
      Catch::Contains("mtp.layers.1.mlp.up_proj.weight") &&
          Catch::Contains("mtp_num_hidden_layers"));
  ModelConfig none = m;
  none.qwen35_layers.mtp_layers = 0;
  CHECK_THROWS_WITH(qwen35_mtp_to_gguf(test::qwen35_mtp_tensors(m, 4), none, dtypes),
                    Catch::Contains("mtp_num_hidden_layers"));
  const GgufRawTensor embed{{"blk.4.nextn.embed_tokens.weight", GgmlType::f32, {64, 100}},
                            std::vector<std::byte>(6400 * 4)};
  CHECK_THROWS_WITH(qwen35_mtp_from_gguf({embed}, m, {}),
                    Catch::Contains("blk.4.nextn.embed_tokens.weight"));
}
