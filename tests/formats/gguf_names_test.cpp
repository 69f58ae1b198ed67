// Hugging Face <-> GGUF tensor names and layouts (formats/gguf_names.h), against llama.cpp's
// tensor map and its converter's RoPE permutation written out as the converter states it.
#include "formats/gguf_names.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

using namespace remat;

TEST_CASE("GGUF names of every llama and qwen2 parameter, and back") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.layers.11.self_attn.q_proj.weight", "blk.11.attn_q.weight"},
      {"model.layers.2.self_attn.q_proj.bias", "blk.2.attn_q.bias"},
      {"model.layers.2.self_attn.k_proj.weight", "blk.2.attn_k.weight"},
      {"model.layers.2.self_attn.v_proj.bias", "blk.2.attn_v.bias"},
      {"model.layers.7.self_attn.o_proj.weight", "blk.7.attn_output.weight"},
      {"model.layers.7.post_attention_layernorm.weight", "blk.7.ffn_norm.weight"},
      {"model.layers.30.mlp.gate_proj.weight", "blk.30.ffn_gate.weight"},
      {"model.layers.30.mlp.up_proj.weight", "blk.30.ffn_up.weight"},
      {"model.layers.30.mlp.down_proj.weight", "blk.30.ffn_down.weight"},
  };
  for (GgufArch arch : {GgufArch::llama, GgufArch::qwen2}) {
    for (const auto& [hf, gguf] : cases) {
      CHECK(gguf_tensor_name(hf, arch) == gguf);
      CHECK(hf_tensor_name(gguf, arch) == hf);
    }
  }
  CHECK_FALSE(hf_tensor_name("rope_freqs.weight", GgufArch::llama));
  CHECK_FALSE(hf_tensor_name("blk.x.attn_q.weight", GgufArch::llama));
  CHECK_FALSE(hf_tensor_name("blk.01.attn_q.weight", GgufArch::llama));
  CHECK_FALSE(hf_tensor_name("blk.1", GgufArch::llama));
  CHECK_FALSE(gguf_tensor_name("model.layers.0.mlp.gate_proj.bias", GgufArch::llama));
}

TEST_CASE("GGUF names of every gpt2 parameter, and back") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"wte.weight", "token_embd.weight"},
      {"wpe.weight", "position_embd.weight"},
      {"ln_f.weight", "output_norm.weight"},
      {"ln_f.bias", "output_norm.bias"},
      {"h.0.ln_1.weight", "blk.0.attn_norm.weight"},
      {"h.0.ln_1.bias", "blk.0.attn_norm.bias"},
      {"h.3.attn.c_attn.weight", "blk.3.attn_qkv.weight"},
      {"h.3.attn.c_attn.bias", "blk.3.attn_qkv.bias"},
      {"h.3.attn.c_proj.weight", "blk.3.attn_output.weight"},
      {"h.3.attn.c_proj.bias", "blk.3.attn_output.bias"},
      {"h.10.ln_2.weight", "blk.10.ffn_norm.weight"},
      {"h.10.mlp.c_fc.weight", "blk.10.ffn_up.weight"},
      {"h.10.mlp.c_fc.bias", "blk.10.ffn_up.bias"},
      {"h.10.mlp.c_proj.weight", "blk.10.ffn_down.weight"},
      {"h.10.mlp.c_proj.bias", "blk.10.ffn_down.bias"},
  };
  for (const auto& [hf, gguf] : cases) {
    CHECK(gguf_tensor_name(hf, GgufArch::gpt2) == gguf);
    CHECK(hf_tensor_name(gguf, GgufArch::gpt2) == hf);
  }
  CHECK(gguf_layout("h.3.attn.c_attn.weight", GgufArch::gpt2, 12, 12).transposed);
  CHECK(gguf_layout("h.3.mlp.c_proj.weight", GgufArch::gpt2, 12, 12).transposed);
  CHECK_FALSE(gguf_layout("h.3.mlp.c_proj.bias", GgufArch::gpt2, 12, 12).transposed);
  CHECK_FALSE(gguf_layout("wte.weight", GgufArch::gpt2, 12, 12).transposed);
}

TEST_CASE("GGUF architectures remat reads") {
  CHECK(gguf_arch("llama") == GgufArch::llama);
  CHECK(gguf_arch("qwen2") == GgufArch::qwen2);
  CHECK(gguf_arch("gpt2") == GgufArch::gpt2);
  CHECK(gguf_arch("qwen3") == GgufArch::qwen3);
  CHECK(gguf_arch_name(GgufArch::qwen3) == "qwen3");
  CHECK_FALSE(gguf_arch("qwen3moe"));
  CHECK(gguf_arch_name(GgufArch::qwen2) == "qwen2");
}

TEST_CASE("qwen3's q/k norms have llama.cpp's names, and its q and k rows keep their order") {
  CHECK(gguf_tensor_name("model.layers.5.self_attn.q_norm.weight", GgufArch::qwen3) ==
        "blk.5.attn_q_norm.weight");
  CHECK(hf_tensor_name("blk.5.attn_k_norm.weight", GgufArch::qwen3) ==
        "model.layers.5.self_attn.k_norm.weight");
  CHECK(gguf_layout("model.layers.0.self_attn.q_proj.weight", GgufArch::qwen3, 16, 8).rope_heads ==
        0);
  CHECK(gguf_layout("model.layers.0.self_attn.k_proj.weight", GgufArch::qwen3, 16, 8).rope_heads ==
        0);
}

TEST_CASE("llama's q and k rows are permuted as llama.cpp's converter permutes them") {
  // The converter: w.reshape(heads, 2, d/2, ...).swapaxes(1, 2).reshape(w.shape), i.e. GGUF row
  // (h, i, t) in [heads, d/2, 2] order holds Hugging Face row (h, t, i) in [heads, 2, d/2] order.
  const int heads = 3;
  const uint64_t d = 8, rows = heads * d;
  std::set<uint64_t> seen;
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t t = 0; t < 2; ++t)
      for (uint64_t i = 0; i < d / 2; ++i) {
        const uint64_t hf_row = h * d + t * (d / 2) + i;
        const uint64_t gguf_row = h * d + i * 2 + t;
        CHECK(gguf_row_of(hf_row, rows, heads) == gguf_row);
        seen.insert(gguf_row_of(hf_row, rows, heads));
      }
  CHECK(seen.size() == rows);  // a permutation
  CHECK(gguf_row_of(5, rows, 0) == 5);
  CHECK_THROWS_WITH(gguf_row_of(0, 15, 3), Catch::Contains("even"));
  CHECK_THROWS_WITH(gguf_row_of(0, 16, 3), Catch::Contains("even"));
  const GgufLayout q = gguf_layout("model.layers.0.self_attn.q_proj.weight", GgufArch::llama, 8, 2);
  const GgufLayout k = gguf_layout("model.layers.0.self_attn.k_proj.weight", GgufArch::llama, 8, 2);
  const GgufLayout v = gguf_layout("model.layers.0.self_attn.v_proj.weight", GgufArch::llama, 8, 2);
  CHECK(q.rope_heads == 8);
  CHECK(k.rope_heads == 2);
  CHECK(v.rope_heads == 0);
  CHECK(gguf_layout("model.layers.0.self_attn.q_proj.weight", GgufArch::qwen2, 8, 2).rope_heads ==
        0);
}
