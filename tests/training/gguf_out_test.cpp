// A session's weights and adapters saved as GGUF (runtime/session_files.h): models load back bit
// for bit as F32 and rounded to nearest even as F16 and BF16; LoRA adapters load back bit for bit
// and hold PEFT's values (B's q/k rows permuted as the base's); merged models equal the merged
// safetensors; a gemma3 model's norms come back as the gains the file holds, less 1; every file is
// replaced atomically, a cancelled or failed save keeping the old one.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_adapter.h"
#include "formats/gguf_model_writer.h"
#include "formats/hf_folder.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

using Params = std::vector<std::pair<std::string, std::vector<float>>>;

ModelConfig llama(bool qkv_bias, bool tied) {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = 2;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn = 96;
  m.vocab = 96;
  m.ctx = 16;
  m.qkv_bias = qkv_bias;
  m.tied_head = tied;
  return m;
}

SessionConfig config(const ModelConfig& m, uint64_t seed, int lora_rank = 0) {
  SessionConfig c;
  c.model = m;
  c.shape.batch = 1;
  c.shape.seq = 8;
  c.policy = Policy::parse("none");
  c.seed = seed;
  c.pipeline_cache_dir = std::nullopt;
  c.lora.rank = lora_rank;
  c.lora.alpha = 6;
  return c;
}

void train_step(Session& s, uint32_t seed) {
  const uint32_t v = uint32_t(s.config().model.vocab);
  s.step(test::random_indices(8, seed, v), test::random_indices(8, seed + 1, v));
}

// Random adapters (B is zero after PEFT's initialisation; these make every pair count).
void randomize_adapters(Session& s, uint64_t seed) {
  std::vector<std::vector<float>> values;
  for (const auto& [name, v] : s.parameters())
    values.push_back(test::random_floats(v.size(), seed++, -0.5f, 0.5f));
  s.set_trained_parameters(values);
}

const std::vector<ModelConfig>& models() {
  static const std::vector<ModelConfig> all = {llama(false, false), llama(true, true),
                                               ModelConfig{2, 32, 2, 64, 16}};
  return all;
}

std::string label(const ModelConfig& m) {
  return std::string(gguf_arch_name(gguf_arch_of(m))) + (m.tied_head ? " tied" : " untied");
}

}  // namespace

TEST_CASE("a session saved as GGUF F32 loads back bit for bit") {
  test::TempFolder d("gguf_out_f32");
  for (const ModelConfig& m : models()) {
    INFO(label(m));
    Session a(test::device(), config(m, 1));
    train_step(a, 3);
    save_checkpoint(a, d / "m.gguf");
    CHECK(checkpoint_model(d / "m.gguf", std::nullopt) == m);
    const GgufFile f = GgufFile::open(d / "m.gguf");
    CHECK(f.metadata().string("general.architecture") ==
          std::string(gguf_arch_name(gguf_arch_of(m))));
    CHECK(f.metadata().string("tokenizer.ggml.model") == "none");
    Session b(test::device(), config(m, 2));
    REQUIRE(b.parameters() != a.parameters());
    b.load(d / "m.gguf");
    CHECK(b.parameters() == a.parameters());
    // Saved again, the loaded weights make the same file.
    save_checkpoint(b, d / "again.gguf");
    CHECK(test::read_bytes(d / "again.gguf") == test::read_bytes(d / "m.gguf"));
  }
}

TEST_CASE("a gemma3 session saved as GGUF loads back as its file means, and saves the same file") {
  test::TempFolder d("gguf_out_gemma3");
  ModelConfig m = llama(false, true);
  m.qk_norm = true;
  m.gemma3 = true;
  m.gemma = {3, 2, 10000.0f, 16.0f};  // query_pre_attn_scalar: the head size, as llama.cpp runs
  Session a(test::device(), config(m, 1));
  train_step(a, 3);
  save_checkpoint(a, d / "m.gguf");
  CHECK(checkpoint_model(d / "m.gguf", std::nullopt) == m);
  Session b(test::device(), config(m, 2));
  b.load(d / "m.gguf");
  const Params trained = a.parameters(), back = b.parameters();
  REQUIRE(back.size() == trained.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    INFO(trained[i].first);
    // Norm offsets w are stored as the gain 1 + w in f32: they read back as fl(1 + w) - 1.
    std::vector<float> want = trained[i].second;
    if (trained[i].first.ends_with("norm.weight"))
      for (float& v : want) v = (1.0f + v) - 1.0f;
    CHECK(std::memcmp(back[i].second.data(), want.data(), want.size() * sizeof(float)) == 0);
  }
  save_checkpoint(b, d / "again.gguf");
  CHECK(test::read_bytes(d / "again.gguf") == test::read_bytes(d / "m.gguf"));
}

TEST_CASE("GGUF F16 and BF16 saves round matrices to nearest even and keep vectors exact") {
  test::TempFolder d("gguf_out_16");
  const ModelConfig m = llama(true, false);
  Session a(test::device(), config(m, 1));
  train_step(a, 3);
  const Params trained = a.parameters();
  for (GgmlType t : {GgmlType::f16, GgmlType::bf16}) {
    INFO(ggml_type_info(t).name);
    GgufSaveOptions o;
    o.matrix_type = t;
    o.extra.set("tokenizer.ggml.model", GgufValue::of("gpt2"));
    save_checkpoint(a, d / "m.gguf", o);
    CHECK(GgufFile::open(d / "m.gguf").metadata().string("tokenizer.ggml.model") == "gpt2");
    Session b(test::device(), config(m, 2));
    b.load(d / "m.gguf");
    const Params back = b.parameters();
    REQUIRE(back.size() == trained.size());
    for (std::size_t i = 0; i < back.size(); ++i) {
      INFO(trained[i].first);
      const bool matrix =
          a.plan().tensors[std::size_t(a.plan().parameters[i])].tensor.shape.size() == 2;
      std::vector<float> want = trained[i].second;
      if (matrix)
        for (float& v : want)
          v = t == GgmlType::f16 ? f16_to_float(float_to_f16(v)) : bf16_to_float(float_to_bf16(v));
      CHECK(std::memcmp(back[i].second.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("a LoRA adapter saved as GGUF loads back bit for bit and holds PEFT's values") {
  test::TempFolder d("gguf_out_adapter");
  for (const ModelConfig& m : models()) {
    INFO(label(m));
    Session a(test::device(), config(m, 1, 4));
    randomize_adapters(a, 10);
    train_step(a, 3);
    const Params trained = a.parameters();
    save_adapter(a, d / "a.gguf", "");
    save_adapter(a, d / "peft", "");

    Session b(test::device(), config(m, 1, 4));
    REQUIRE(b.parameters() != trained);
    load_adapter(b, d / "a.gguf");
    CHECK(b.parameters() == trained);
    // The same training in PEFT's files, tensor by tensor; B's q/k rows permuted in GGUF.
    const SafetensorsContents peft = read_safetensors(d / "peft" / kPeftWeightsFile);
    const GgufFile f = GgufFile::open(d / "a.gguf");
    const Plan& plan = a.plan();
    CHECK(f.tensors().size() == 2 * plan.adapters.size());
    for (const LoraAdapter& ad : plan.adapters) {
      const std::string base = plan.tensors[std::size_t(ad.base)].tensor.name;
      const std::string gguf = *gguf_tensor_name(base, gguf_arch_of(m));
      const GgufLayout layout = gguf_layout(base, gguf_arch_of(m), m.heads, m.kv_head_count());
      for (bool is_b : {false, true}) {
        const Tensor& t = plan.tensors[std::size_t(is_b ? ad.b : ad.a)].tensor;
        const NamedTensor* p = peft.find(peft_key(t.name, m.arch));
        REQUIRE(p != nullptr);
        const GgufTensor* g = f.tensor(gguf + (is_b ? ".lora_b" : ".lora_a"));
        REQUIRE(g != nullptr);
        CHECK(g->shape() == t.shape);
        std::vector<float> stored(std::size_t(t.elements()));
        f.read(*g, 0, std::as_writable_bytes(std::span(stored)));
        const uint64_t rows = uint64_t(t.shape[0]), cols = uint64_t(t.shape[1]);
        std::size_t wrong = 0;
        for (uint64_t r = 0; r < rows; ++r) {
          const uint64_t at = is_b ? gguf_row_of(r, rows, layout.rope_heads) : r;
          wrong += std::memcmp(&stored[at * cols], &p->values[r * cols], cols * sizeof(float)) != 0;
        }
        CHECK(wrong == 0);
        if (is_b && layout.rope_heads > 0) CHECK(stored != p->values);
      }
    }
    // --adapter-dtype f16: the same pairs rounded.
    GgufSaveOptions half;
    half.adapter_type = GgmlType::f16;
    save_adapter(a, d / "h.gguf", "", half);
    load_adapter(b, d / "h.gguf");
    const Params back = b.parameters();
    for (std::size_t i = 0; i < back.size(); ++i)
      for (std::size_t k = 0; k < back[i].second.size(); ++k)
        if (back[i].second[k] != f16_to_float(float_to_f16(trained[i].second[k])))
          FAIL(trained[i].first);
  }
}

TEST_CASE("a GGUF adapter that does not fit the session is refused and changes nothing") {
  test::TempFolder d("gguf_out_adapter_refused");
  const ModelConfig m = llama(false, false);
  Session a(test::device(), config(m, 1, 4));
  randomize_adapters(a, 10);
  save_adapter(a, d / "a.gguf", "");
  SessionConfig other = config(m, 1, 2);
  Session b(test::device(), other);
  const Params before = b.parameters();
  CHECK_THROWS_WITH(load_adapter(b, d / "a.gguf"),
                    Catch::Contains("r 4, not the requested rank 2"));
  other = config(m, 1, 4);
  other.lora.targets = {"q_proj", "v_proj"};
  Session c(test::device(), other);
  CHECK_THROWS_WITH(load_adapter(c, d / "a.gguf"), Catch::Contains("not the requested"));
  Session q(test::device(), config(llama(true, false), 1, 4));
  CHECK_THROWS_WITH(load_adapter(q, d / "a.gguf"),
                    Catch::Contains("adapter for a llama model; this model is qwen2"));
  save_checkpoint(a, d / "m.gguf");
  CHECK_THROWS_WITH(load_adapter(b, d / "m.gguf"), Catch::Contains("not 'adapter'"));
  CHECK(b.parameters() == before);
}

TEST_CASE("a merged GGUF model holds the merged safetensors' weights") {
  test::TempFolder d("gguf_out_merged");
  for (const ModelConfig& m : models()) {
    INFO(label(m));
    Session a(test::device(), config(m, 1, 4));
    randomize_adapters(a, 20);
    save_merged(a, d / "m.safetensors");
    save_merged(a, d / "m.gguf");
    Session from_st(test::device(), config(m, 2));
    from_st.load(d / "m.safetensors");
    Session from_gguf(test::device(), config(m, 3));
    from_gguf.load(d / "m.gguf");
    CHECK(from_gguf.parameters() == from_st.parameters());
    // Merging changed the adapted weights: the base is not what was saved.
    Session base(test::device(), config(m, 1));
    CHECK(base.parameters() != from_gguf.parameters());
  }
}

TEST_CASE("a cancelled or failed GGUF save leaves the previous file as it was") {
  test::TempFolder d("gguf_out_cancel");
  bool cancel = false;
  SessionConfig c = config(llama(false, false), 1);
  uint64_t last = 0, total = 0;
  c.progress = [&](const ProgressEvent& e) {
    if (e.phase == "save") last = e.done, total = e.total;
    return !(cancel && e.phase == "save" && e.done > 0);
  };
  Session a(test::device(), c);
  save_checkpoint(a, d / "m.gguf");
  CHECK(last == total);
  CHECK(total == a.config().model.parameter_count() * sizeof(float));
  const auto before = test::read_bytes(d / "m.gguf");
  train_step(a, 3);
  cancel = true;
  CHECK_THROWS_AS(save_checkpoint(a, d / "m.gguf"), Cancelled);
  CHECK(test::read_bytes(d / "m.gguf") == before);
  CHECK(d.entries() == 1);
  cancel = false;
  GgufSaveOptions q4;
  q4.matrix_type = GgmlType::q4_0;
  CHECK_THROWS_WITH(save_checkpoint(a, d / "m.gguf", q4), Catch::Contains("f32, f16 or bf16"));
  CHECK(test::read_bytes(d / "m.gguf") == before);
}
