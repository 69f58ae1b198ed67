// QLoRA on gpt2 and gemma3 files llama.cpp's own quantizer wrote (Q8_0, and Q4_K_M: q4_K and q6_K
// blocks among others): every quantized matrix stays in its blocks on the device (gpt2's Conv1D
// matrices as the file's [out, in] rows, GPT-2's position-added and Gemma's scaled token
// embedding through the block gather, the tied heads), and training on them gives the losses
// and adapters of the same file decoded to f32, bit for bit, under two checkpoint policies, whole
// logits and chunked, and in packed rows. The files a session writes (the base decoded, merged
// with its adapters, the PEFT adapter) are those of the decoded session, byte for byte: Hugging
// Face's [in, out] for gpt2 and fan_in_fan_out, however the device holds the matrices.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "graph/lora.h"
#include "graph/model_builder.h"
#include "graph/weight_dtype.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/llama_cpp_library.h"

using namespace remat;
namespace fs = std::filesystem;

#if REMAT_HAVE_LLAMA_H
namespace {

constexpr uint32_t kVocab = 80;

// Rows of 256 values, so that llama.cpp's K-quants apply (it falls back for other widths).
ModelConfig gpt2() {
  return ModelConfig{2, 256, 4, int(kVocab), 32};
}

// Gemma 3: layers 0 and 1 local (window 3), layer 2 global with linear RoPE scaling, the query
// scale llama.cpp assumes (the head size, 64).
ModelConfig gemma3() {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = 3;
  m.dim = 256;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn = 256;
  m.vocab = int(kVocab);
  m.ctx = 32;
  m.rope_theta = 100000.0f;
  m.norm_eps = 1e-6f;
  m.qk_norm = true;
  m.gemma3 = true;
  m.gemma = {3, 3, 100.0f, 64.0f, 2.0f};
  return m;
}

SessionConfig config(const ModelConfig& m, int lora_rank) {
  SessionConfig c;
  c.model = m;
  c.shape.batch = 2;
  c.shape.seq = 13;
  c.optimizer.lr = 1e-2;
  c.seed = 5;
  c.lora.rank = lora_rank;
  return c;
}

std::vector<float> three_steps(Session& s) {
  const std::size_t n = std::size_t(s.config().shape.batch) * s.config().shape.seq;
  std::vector<float> losses;
  for (uint32_t step = 0; step < 3; ++step)
    losses.push_back(s.step(test::random_indices(n, 10 + step, kVocab),
                            test::random_indices(n, 20 + step, kVocab)));
  return losses;
}

// Packed rows of 13: examples of 5 and 8 tokens, positions restarting at 0 with each.
std::vector<float> three_packed_steps(Session& s) {
  const std::size_t n = std::size_t(s.config().shape.batch) * s.config().shape.seq;
  std::vector<uint32_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = uint32_t(i % 13 < 5 ? i % 13 : i % 13 - 5);
  std::vector<float> losses;
  for (uint32_t step = 0; step < 3; ++step)
    losses.push_back(s.step(test::random_indices(n, 30 + step, kVocab),
                            test::random_indices(n, 40 + step, kVocab), positions));
  return losses;
}

// What the graph of `c` decodes of the weights the file offers in blocks: nothing.
std::vector<std::string> decoded_weights(const SessionConfig& c) {
  Graph g = build_model(c.model, c.shape);
  LoraSpec lora = c.lora;
  lora.targets = lora_targets(lora, c.model);
  apply_lora(g, lora);
  return store_block_weights(g, c.shape.block_weights, c.shape.activation_dtype);
}

// Whether two files hold the same bytes; the first difference is reported, not the files.
bool same_file(const fs::path& a, const fs::path& b) {
  const auto x = test::read_bytes(a), y = test::read_bytes(b);
  std::size_t i = 0;
  while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
  if (i == x.size() && i == y.size()) return true;
  UNSCOPED_INFO(a.string() << " (" << x.size() << " bytes) and " << b.string() << " (" << y.size()
                           << " bytes) differ from byte " << i);
  return false;
}

void check_file(const fs::path& quantized, const ModelConfig& m, const fs::path& dir) {
  const GgufWeights g(GgufFile::open(quantized));
  REQUIRE(g.model() == m);
  SessionConfig decoded = config(m, 4);
  SessionConfig blocks = decoded;
  blocks.shape.block_weights = g.block_weights();
  REQUIRE(!blocks.shape.block_weights.empty());
  CHECK(decoded_weights(blocks).empty());

  Session reference(test::device(), decoded);
  reference.load(quantized);
  const std::vector<float> want = three_steps(reference);
  save_adapter(reference, dir / "reference", "");
  reference.save(dir / "reference.safetensors");
  save_merged(reference, dir / "reference_merged.gguf");
  save_merged(reference, dir / "reference_merged.safetensors");

  const std::pair<const char*, int> runs[] = {{"none", 0}, {"every:1", 64}};
  for (const auto& [policy, chunk] : runs) {
    INFO(policy << ", loss chunk " << chunk);
    blocks.policy = Policy::parse(policy);
    blocks.shape.loss_chunk = chunk;
    Session qlora(test::device(), blocks);
    qlora.load(quantized);
    // Every weight the file holds in blocks is held so on the device, and nothing else: the
    // device has no float copy of a quantized weight.
    std::size_t kept = 0;
    for (TensorId id : qlora.plan().frozen) {
      const Tensor& t = qlora.plan().tensors.at(std::size_t(id)).tensor;
      bool offered = false;
      for (const BlockWeight& b : blocks.shape.block_weights) offered |= b.name == t.name;
      CHECK((t.dtype == DType::blocks) == offered);
      if (t.dtype != DType::blocks) continue;
      ++kept;
      INFO(t.name);
      CHECK((qlora.values(id) == reference.values(id)));  // in the file's order, both
    }
    CHECK(kept == blocks.shape.block_weights.size());
    CHECK(qlora.plan().persistent_bytes < reference.plan().persistent_bytes);
    CHECK((three_steps(qlora) == want));
    const fs::path out = dir / policy;
    save_adapter(qlora, out, "");
    for (const char* file : {"adapter_model.safetensors", "adapter_config.json"})
      CHECK(same_file(out / file, dir / "reference" / file));
    qlora.save(out / "base.safetensors");
    CHECK(same_file(out / "base.safetensors", dir / "reference.safetensors"));
    save_merged(qlora, out / "merged.gguf");
    CHECK(same_file(out / "merged.gguf", dir / "reference_merged.gguf"));
    save_merged(qlora, out / "merged.safetensors");
    CHECK(same_file(out / "merged.safetensors", dir / "reference_merged.safetensors"));
  }
  // Packed rows: the block gather reads each token's position in its example.
  decoded.shape.packed = blocks.shape.packed = true;
  Session packed_reference(test::device(), decoded);
  packed_reference.load(quantized);
  Session packed(test::device(), blocks);
  packed.load(quantized);
  CHECK((three_packed_steps(packed) == three_packed_steps(packed_reference)));
  CHECK((packed.parameters() == packed_reference.parameters()));
}

}  // namespace
#endif

TEST_CASE(
    "QLoRA on gpt2 and gemma3 files llama.cpp quantized keeps every quantized matrix in "
    "blocks and trains as on the decoded file") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  for (const ModelConfig& m : {gpt2(), gemma3()}) {
    const std::string arch = m.gemma3 ? "gemma3" : "gpt2";
    test::TempFolder d("gguf_qlora_blocks_" + arch);
    {
      Session full(test::device(), config(m, 0));
      save_checkpoint(full, d / "f32.gguf");
    }
    const std::pair<const char*, llama_ftype> presets[] = {{"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
                                                           {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}};
    for (const auto& [name, ftype] : presets) {
      INFO(arch << " " << name);
      const fs::path q = d / (std::string(name) + ".gguf");
      llama_model_quantize_params qp = l->quantize_default_params();
      qp.ftype = ftype;
      qp.nthread = 2;
      REQUIRE(l->quantize((d / "f32.gguf").c_str(), q.c_str(), &qp) == 0);
      fs::create_directory(d / name);
      check_file(q, m, d / name);
    }
  }
#else
  test::llama_cpp();
#endif
}
