// A quantized qwen35 file's linear-attention matrices for QLoRA (formats/gguf_model.h,
// GgufWeights::block_weights and read_blocks): in_proj_qkv, in_proj_z, in_proj_a and in_proj_b
// keep their blocks, their rows read back in Hugging Face's order where the converter tiled the
// value heads; out_proj keeps its blocks only when nothing moved (its columns move otherwise).
// Q8_0 blocks are written here by hand: the stored bytes are whatever a quantizer wrote, and
// each block tensor must decode to exactly what GgufWeights::read gives.
#include "formats/gguf_model.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_blocks.h"
#include "formats/gguf_qwen35.h"
#include "formats/gguf_writer.h"
#include "tests/support/qwen35_files.h"
#include "tests/support/temp_folder.h"

using namespace remat;

namespace {

// ggml's Q8_0: per 32 values an f16 scale d = max|x| / 127 and 32 int8 round(x / d).
std::vector<std::byte> q8_0(const std::vector<float>& v) {
  std::vector<std::byte> out;
  for (std::size_t b = 0; b < v.size(); b += 32) {
    float amax = 0.0f;
    for (std::size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f, inv = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = float_to_f16(d);
    out.push_back(std::byte(h & 0xff));
    out.push_back(std::byte(h >> 8));
    for (std::size_t i = b; i < b + 32; ++i)
      out.push_back(std::byte(static_cast<int8_t>(std::lround(v[i] * inv))));
  }
  return out;
}

// The tiny model's file with every matrix but the conv in Q8_0 (rows of 64 or 96 values).
void write_q8_0(const std::filesystem::path& path, const ModelConfig& m) {
  GgufMetadata md("qwen35 q8_0 test file");
  const GgufMetadata keys = qwen35_gguf_metadata(m);
  for (const GgufMetadata::Entry& e : keys.entries()) md.set(e.key, e.value);
  std::vector<GgufTensorSpec> specs;
  std::vector<std::vector<float>> values;
  for (const NamedTensor& t : test::qwen35_weights(m, 3)) {
    values.push_back(qwen35_to_gguf(t.name, t.shape, t.values, m));
    const std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
    const bool blocks = ne.size() == 2 && !t.name.ends_with("conv1d.weight");
    specs.push_back(
        {*qwen35_gguf_tensor_name(t.name), blocks ? GgmlType::q8_0 : GgmlType::f32, ne});
  }
  GgufWriter out(path, md, specs);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].type == GgmlType::q8_0)
      out.write(std::span<const std::byte>(q8_0(values[i])));
    else
      out.write(std::span<const float>(values[i]));
  }
  out.commit();
}

}  // namespace

TEST_CASE("qwen35 Q8_0 linear-attention matrices keep their blocks, rows in Hugging Face order") {
  test::TempFolder d("gguf_qwen35_blocks");
  for (int value_heads : {4, 2}) {
    INFO("value heads " << value_heads << " over 2 key heads");
    ModelConfig m = test::tiny_qwen35();
    m.qwen35_layers.mtp_layers = 0;
    m.qwen35_layers.linear_value_heads = value_heads;
    write_q8_0(d / "m.gguf", m);
    const GgufWeights w(GgufFile::open(d / "m.gguf"));
    std::set<std::string> kept;
    for (const BlockWeight& b : w.block_weights()) kept.insert(b.name);
    const std::string lin = "model.layers.0.linear_attn.";
    for (const char* p : {"in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b"})
      CHECK(kept.count(lin + p + ".weight"));
    CHECK(kept.count(lin + "out_proj.weight") == (value_heads == 2 ? 1u : 0u));
    CHECK(kept.count("model.layers.1.self_attn.q_proj.weight"));
    CHECK_FALSE(kept.count(lin + "conv1d.weight"));  // F32, as llama.cpp's quantizer leaves it
    for (const SafetensorsEntry& e : w.header().tensors) {
      if (!kept.count(e.name)) continue;
      INFO(e.name);
      uint64_t n = 1;
      for (int64_t x : e.shape) n *= uint64_t(x);
      std::vector<std::byte> blocks(n / 32 * 34);
      w.read_blocks(e, 0, blocks);
      std::vector<float> decoded(n), values(n);
      decode_blocks(GgmlType::q8_0, blocks, decoded);
      w.read(e, 0, values);
      CHECK(decoded == values);
    }
  }
}

TEST_CASE("qwen35 GGUF rows: value-head rows move, key rows and equal head counts do not") {
  ModelConfig m = test::tiny_qwen35();  // 2 key heads of 16, 4 value heads of 16
  const std::string lin = "model.layers.0.linear_attn.";
  // in_proj_qkv: 64 q and k rows in place, then value heads grouped [k0: v0 v1][k1: v0 v1]
  // stored tiled [v0 of k0, v0 of k1, v1 of k0, v1 of k1]: Hugging Face head 1 is GGUF head 2.
  CHECK(qwen35_gguf_row(lin + "in_proj_qkv.weight", 63, m) == 63);
  CHECK(qwen35_gguf_row(lin + "in_proj_qkv.weight", 64 + 16 + 5, m) == 64 + 32 + 5);
  CHECK(qwen35_gguf_row(lin + "in_proj_z.weight", 16 + 5, m) == 32 + 5);
  CHECK(qwen35_gguf_row(lin + "in_proj_a.weight", 1, m) == 2);
  CHECK(qwen35_gguf_row(lin + "in_proj_b.weight", 2, m) == 1);
  CHECK(qwen35_moves_rows_only(lin + "in_proj_b.weight", m));
  CHECK_FALSE(qwen35_moves_rows_only(lin + "out_proj.weight", m));
  CHECK_FALSE(qwen35_moves_rows_only(lin + "A_log", m));
  m.qwen35_layers.linear_value_heads = 2;
  CHECK(qwen35_gguf_row(lin + "in_proj_z.weight", 16 + 5, m) == 16 + 5);
  CHECK(qwen35_moves_rows_only(lin + "out_proj.weight", m));
}
