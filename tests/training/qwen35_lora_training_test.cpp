// LoRA on Qwen3.5: the loss falls with the base frozen; the adapters after a few steps are the
// same bits whatever the checkpoint plan and the delta rule's chunk length; PEFT and GGUF adapter
// files read back as written; and llama.cpp (tests/training/llama_cpp_library.h), given the base
// remat saved from a converter-style qwen35 file and the adapter remat saved, gives remat's
// log-probabilities, with value heads tiled in the file (4 value heads on 2 key heads).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/qwen35_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/llama_cpp_check.h"

using namespace remat;

namespace {

// C 48, 2 query heads of 16 on 1 KV head, MLP 80, vocabulary 101; three Gated DeltaNet layers of
// 2 key heads shared by 4 value heads (dk 8, dv 12), then one gated attention layer. B 2, T 150
// (two whole 64-token blocks of the chunkwise delta rule and a part one).
SessionConfig odd_qwen35_lora() {
  SessionConfig c;
  ModelConfig& m = c.model;
  m = ModelConfig::preset("qwen3.5-tiny");
  m.dim = 48;
  m.heads = 2;
  m.kv_heads = 1;
  m.head_size = 16;
  m.ffn = 80;
  m.vocab = 101;
  m.ctx = 160;
  m.qwen35_layers = {4, 2, 4, 8, 12, 4, 0.25f, 0, {1, 1, 0}, true};
  c.shape.batch = 2;
  c.shape.seq = 150;
  c.optimizer.lr = 2e-2;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 77;
  c.lora.rank = 4;
  return c;
}

struct Run {
  std::vector<float> losses;
  std::vector<std::vector<float>> adapters;  // every trained parameter after the last step
  std::vector<std::vector<float>> frozen;    // the base after the last step
};

Run train(SessionConfig c, const std::string& policy, std::optional<uint64_t> arena,
          int delta_chunk, int steps, bool repeat) {
  c.policy = Policy::parse(policy);
  c.arena_budget = arena;
  c.shape.delta_chunk = delta_chunk;
  Session s(test::device(), c);
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  Run r;
  for (int step = 0; step < steps; ++step) {
    const uint64_t seed = repeat ? 0 : uint64_t(step);
    r.losses.push_back(s.step(test::random_indices(n, 100 + seed, uint32_t(c.model.vocab)),
                              test::random_indices(n, 200 + seed, uint32_t(c.model.vocab))));
  }
  for (TensorId p : s.plan().parameters) r.adapters.push_back(s.values(p));
  for (TensorId p : s.plan().frozen) r.frozen.push_back(s.values(p));
  return r;
}

bool same_bytes(const std::vector<std::vector<float>>& a,
                const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (a[p].size() != b[p].size() ||
        std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(float)) != 0)
      return false;
  return true;
}

}  // namespace

TEST_CASE("qwen3.5 LoRA: the loss falls on a repeated batch and the base does not move") {
  const SessionConfig c = odd_qwen35_lora();
  const Run before = train(c, "none", std::nullopt, 0, 0, true);
  const Run r = train(c, "none", std::nullopt, 0, 10, true);
  for (float l : r.losses) REQUIRE(std::isfinite(l));
  CHECK(r.losses.front() == Approx(std::log(101.0)).margin(0.3));  // B starts at zero
  CHECK(r.losses.back() < r.losses.front() - 0.3f);
  CHECK(same_bytes(r.frozen, before.frozen));
  CHECK_FALSE(same_bytes(r.adapters, before.adapters));
}

TEST_CASE("qwen3.5 LoRA: adapters are byte-identical across policies and chunk lengths") {
  const SessionConfig c = odd_qwen35_lora();
  const Run base = train(c, "none", std::nullopt, 0, 3, false);
  for (int chunk : {0, 64, 128}) {
    TrainShape shape = c.shape;
    shape.delta_chunk = chunk;
    const uint64_t minimum =
        minimum_arena_bytes(c.model, shape, session_alignment(test::device()), nullptr, c.lora);
    for (const auto& [policy, arena] :
         {std::pair<std::string, std::optional<uint64_t>>{"every:1", {}}, {"auto", minimum}}) {
      DYNAMIC_SECTION("chunk " << chunk << " " << policy) {
        const Run r = train(c, policy, arena, chunk, 3, false);
        CHECK(r.losses == base.losses);
        CHECK(same_bytes(r.adapters, base.adapters));
      }
    }
  }
}

TEST_CASE("qwen3.5 LoRA: PEFT and GGUF adapter files read back as written") {
  test::TempFolder d("qwen35_lora_files");
  SessionConfig c = odd_qwen35_lora();
  c.lora.targets = {"q_proj",    "k_proj",    "v_proj",   "o_proj",    "in_proj_qkv", "in_proj_z",
                    "in_proj_a", "in_proj_b", "out_proj", "gate_proj", "up_proj",     "down_proj"};
  Session s(test::device(), c);
  std::vector<std::vector<float>> values;
  uint64_t seed = 900;
  for (const auto& [name, v] : s.parameters())
    values.push_back(test::random_floats(v.size(), seed++, -0.5f, 0.5f));
  s.set_trained_parameters(values);
  save_adapter(s, d / "peft", "");
  save_adapter(s, d / "a.gguf", "");
  for (const char* file : {"peft", "a.gguf"}) {
    INFO(file);
    Session back(test::device(), c);
    load_adapter(back, d / file);
    std::vector<std::vector<float>> read;
    for (TensorId p : back.plan().parameters) read.push_back(back.values(p));
    CHECK(same_bytes(read, values));  // f32 both: exact, value heads moved there and back
  }
  // The config names Qwen3.5's modules; a session with the defaults refuses it by name.
  SessionConfig defaults = c;
  defaults.lora.targets.clear();
  Session other(test::device(), defaults);
  CHECK_THROWS_WITH(load_adapter(other, d / "peft"), Catch::Contains("in_proj_a"));
}

TEST_CASE("qwen3.5 LoRA: llama.cpp runs remat's GGUF adapter on remat's base with its log-probs") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("qwen35_lora_llama_cpp");
  // A converter-style file of the tiny model (llama.cpp needs dv = dk: 16 each, 4 value heads on
  // 2 key heads) without MTP, loaded as the frozen base.
  ModelConfig file_model = test::tiny_qwen35();
  file_model.qwen35_layers.mtp_layers = 0;
  GgufMetadata no_vocabulary("tokenizer");
  no_vocabulary.set("tokenizer.ggml.model", GgufValue::of(std::string("none")));
  test::write_qwen35_gguf(d / "in.gguf", file_model, test::qwen35_weights(file_model, 21), {},
                          no_vocabulary);
  SessionConfig c = test::config(GgufWeights(GgufFile::open(d / "in.gguf")).model(), 4);
  c.lora.targets = {"q_proj",    "k_proj",    "v_proj",   "o_proj",    "in_proj_qkv", "in_proj_z",
                    "in_proj_a", "in_proj_b", "out_proj", "gate_proj", "up_proj",     "down_proj"};
  Session s(test::device(), c);
  s.load(d / "in.gguf");
  test::randomize_adapters(s);
  save_checkpoint(s, d / "base.gguf");  // under LoRA: the frozen base
  save_adapter(s, d / "a.gguf", "");
  test::LlamaCppModel model(*l, d / "base.gguf");
  REQUIRE(model.loaded());
  const test::Reference r = test::remat_reference(s);
  const double base = test::worst_difference(model, r, c.model.vocab);
  llama_adapter_lora* adapter = model.adapter(d / "a.gguf");
  REQUIRE(adapter != nullptr);
  const double worst = test::worst_difference(model, r, c.model.vocab, adapter);
  std::printf("llama.cpp qwen35 adapter: worst |log p difference| %.3g (base alone: %.3g)\n", worst,
              base);
  CHECK(worst < test::tolerance(c.model));
  CHECK(base > 10 * test::tolerance(c.model));
#else
  test::llama_cpp();
#endif
}
