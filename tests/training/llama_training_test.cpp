// The Llama family trains on the same guarantees as GPT-2: byte-identical weights under every
// checkpoint policy and arena (Llama 3's RoPE scaling, Qwen3's q/k norms and Gemma 3 included),
// planned bytes equal to allocated bytes, Hugging Face's initialisation, and weights saved and
// loaded by their Hugging Face names (F32, F16, BF16), refusing a file that does not fit the model.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "formats/safetensors.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

using Params = std::vector<std::pair<std::string, std::vector<float>>>;

// Odd sizes (no tile multiple): L3 C48, 6 query heads of 8 sharing 2 key/value heads, MLP 80,
// vocabulary 300, T23, B3.
SessionConfig odd_config(bool tied, bool qkv_bias) {
  SessionConfig c;
  ModelConfig& m = c.model;
  m = test::odd_llama(3, tied);
  m.qkv_bias = qkv_bias;
  c.shape.batch = 3;
  c.shape.seq = 23;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 1234;
  c.pipeline_cache_dir = std::nullopt;
  return c;
}

// Bit identity across policies, from a start near the uniform loss (N(0, 0.02) weights).
void check_llama_policies(const SessionConfig& c) {
  const test::PolicyRun base = test::check_all_policies_identical(c);
  CHECK(std::abs(base.losses[0] - std::log(float(c.model.vocab))) < 0.1f);
}

// A safetensors image of `tensors` stored as BF16: each float's upper half, little-endian.
std::string bf16_image(const std::vector<NamedTensor>& tensors) {
  std::string header = "{", data;
  for (const NamedTensor& t : tensors) {
    const std::size_t begin = data.size();
    for (float v : t.values) {
      const uint32_t bits = std::bit_cast<uint32_t>(v);
      data += char((bits >> 16) & 0xff);
      data += char(bits >> 24);
    }
    std::string dims;
    for (int64_t d : t.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    header += (header.size() > 1 ? "," : "") + std::string("\"") + t.name +
              "\":{\"dtype\":\"BF16\",\"shape\":[" + dims + "],\"data_offsets\":[" +
              std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  std::string image(8, '\0');
  for (int i = 0; i < 8; ++i) image[i] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return image + header + data;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace

TEST_CASE("llama: weights are byte-identical across policies and arenas after 3 AdamW steps") {
  check_llama_policies(odd_config(false, false));
}

TEST_CASE("llama with a tied head and q/k/v biases: byte-identical across policies") {
  check_llama_policies(odd_config(true, true));
}

TEST_CASE("llama with Llama 3's llama3 RoPE scaling: byte-identical across policies") {
  SessionConfig c = odd_config(true, false);
  c.model.rope_scaling = RopeScaling::llama3;
  c.model.llama3 = {8.0f, 1.0f, 4.0f, 100};
  check_llama_policies(c);
}

TEST_CASE("qwen3 with q/k norms and head_dim 12 != C/heads: byte-identical across policies") {
  SessionConfig c = odd_config(true, false);
  c.model.qk_norm = true;
  c.model.head_size = 12;
  check_llama_policies(c);
}

// Gemma 3: layers 0 and 2 local, 1 global, (1 + w) norms, GeGLU, the embedding times sqrt(C).
// With `window` below the 23 positions the local layers attend through a sliding window, and a
// query scalar other than the head size (16) scales every score otherwise.
SessionConfig odd_gemma3(int window, float query_scalar = 16.0f) {
  SessionConfig c = odd_config(true, false);
  ModelConfig& m = c.model;
  m.qk_norm = true;
  m.head_size = 16;
  m.norm_eps = 1e-6f;
  m.rope_theta = 1000000.0f;
  m.gemma3 = true;
  m.gemma = {window, 2, 10000.0f, query_scalar};
  return c;
}

TEST_CASE("gemma3 with local and global layers: byte-identical across policies") {
  const SessionConfig c = odd_gemma3(32);
  check_llama_policies(c);
  // Gemma's norms start at 0 (gain 1 + 0), as Gemma3RMSNorm does.
  Session s(test::device(), c);
  for (const auto& [name, values] : s.parameters())
    if (name.ends_with("norm.weight")) {
      INFO(name);
      CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; }));
    }
}

TEST_CASE("gemma3 with a sliding window of 4 and query_pre_attn_scalar 24: byte-identical") {
  check_llama_policies(odd_gemma3(4, 24.0f));
}

TEST_CASE("llama: Hugging Face initialisation, deterministic per seed") {
  SessionConfig c = odd_config(false, true);
  c.policy = Policy::parse("none");
  Session a(test::device(), c);
  const Params p = a.parameters();
  std::map<std::string, std::vector<float>> by_name(p.begin(), p.end());
  for (const auto& [name, values] : p) {
    INFO(name);
    if (name.ends_with("layernorm.weight") || name == "model.norm.weight") {
      CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v == 1.0f; }));
    } else if (name.ends_with(".bias")) {
      CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; }));
    } else {
      double sum = 0, squares = 0;
      for (float v : values) sum += v, squares += double(v) * v;
      const double n = double(values.size());
      CHECK(std::abs(sum / n) < 4 * 0.02 / std::sqrt(n));
      CHECK(std::sqrt(squares / n) == Approx(0.02).epsilon(0.2));
    }
  }
  CHECK(by_name.count("lm_head.weight") == 1);
  CHECK(by_name.at("model.layers.2.self_attn.k_proj.weight").size() == 16 * 48);
  Session b(test::device(), c);
  CHECK(b.parameters() == p);
  c.seed = 99;
  Session other(test::device(), c);
  CHECK(other.parameters() != p);
}

TEST_CASE("llama: weights round-trip by Hugging Face name and mismatched files are refused") {
  test::TempFolder d("llama_io");
  SessionConfig c = odd_config(false, false);
  c.policy = Policy::parse("none");
  Session a(test::device(), c);
  const size_t n = size_t(c.shape.batch) * c.shape.seq;
  a.step(test::random_indices(n, 1, 300), test::random_indices(n, 2, 300));
  a.save(d / "a.safetensors");
  const SafetensorsContents saved = read_safetensors(d / "a.safetensors");
  std::map<std::string, std::string> dtypes;
  for (const NamedTensor& t : saved.tensors) dtypes[t.name] = t.source_dtype;
  CHECK(dtypes.size() == a.parameters().size());
  CHECK(dtypes.at("model.embed_tokens.weight") == "F32");
  CHECK(dtypes.count("model.layers.1.mlp.gate_proj.weight") == 1);

  c.seed = 7;
  Session b(test::device(), c);
  b.load(d / "a.safetensors");
  CHECK(b.parameters() == a.parameters());

  Session e(test::device(), c);
  // Missing, unexpected and mis-shaped tensors, each named.
  auto file_with = [&](const std::function<void(std::vector<NamedTensor>&)>& edit) {
    std::vector<NamedTensor> t = saved.tensors;
    edit(t);
    return serialize_safetensors(t, {});
  };
  const std::string missing = file_with([](auto& t) { t.pop_back(); });
  CHECK_THROWS_WITH(e.load(bytes_of(missing), "missing"), Catch::Contains("has no tensor"));
  const std::string extra = file_with([](auto& t) {
    t.push_back({"model.layers.9.mlp.up_proj.weight", {1}, {0.0f}});
  });
  CHECK_THROWS_WITH(e.load(bytes_of(extra), "extra"),
                    Catch::Contains("model.layers.9.mlp.up_proj.weight"));
  const std::string gpt = file_with([](auto& t) { t[0].name = "wte.weight"; });
  CHECK_THROWS_AS(e.load(bytes_of(gpt), "gpt names"), std::invalid_argument);
  // A tied model would ignore lm_head.weight; this untied one needs it.
  const std::string no_head = file_with([](auto& t) {
    std::erase_if(t, [](const NamedTensor& x) { return x.name == "lm_head.weight"; });
  });
  CHECK_THROWS_WITH(e.load(bytes_of(no_head), "no head"), Catch::Contains("lm_head.weight"));
}

TEST_CASE("llama: BF16 checkpoints with the model's shapes load exactly") {
  SessionConfig c = odd_config(true, false);
  c.policy = Policy::parse("none");
  Session a(test::device(), c);
  const Params p = a.parameters();
  test::TempFolder d("llama_bf16");
  a.save(d / "s.safetensors");
  // The saved tensors (names and shapes) with values rounded down to BF16.
  std::vector<NamedTensor> tensors = read_safetensors(d / "s.safetensors").tensors;
  for (NamedTensor& t : tensors)
    for (float& v : t.values) v = std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xffff0000u);
  const std::string image = bf16_image(tensors);
  c.seed = 5;
  Session b(test::device(), c);
  b.load(bytes_of(image), "bf16");
  std::map<std::string, std::vector<float>> loaded;
  for (auto& [name, values] : b.parameters()) loaded[name] = values;
  REQUIRE(loaded.size() == tensors.size());
  CHECK(loaded.count("lm_head.weight") == 0);  // tied
  for (const NamedTensor& t : tensors) {
    INFO(t.name);
    CHECK(loaded.at(t.name) == t.values);
  }
  // A tied model skips an lm_head.weight in the file, as transformers does.
  std::vector<NamedTensor> with_head = tensors;
  with_head.push_back(tensors.front());
  with_head.back().name = "lm_head.weight";
  b.load(bytes_of(bf16_image(with_head)), "bf16 with head");
}

TEST_CASE("llama: dropout is refused for training") {
  SessionConfig c = odd_config(false, false);
  c.shape.dropout = 0.1f;
  CHECK_THROWS_WITH(Session(test::device(), c), Catch::Contains("no dropout"));
}

TEST_CASE("llama: evaluation and sampling read the head's logits") {
  SessionConfig c = odd_config(true, false);
  c.policy = Policy::parse("sqrt");
  Session s(test::device(), c);
  const size_t n = size_t(c.shape.batch) * c.shape.seq;
  const float loss = s.evaluate(test::random_indices(n, 1, 300), test::random_indices(n, 2, 300));
  CHECK(std::abs(loss - std::log(300.0f)) < 0.1f);
  const std::vector<uint32_t> prompt = {5, 17, 299};
  const auto a = s.sample(prompt, 8, 42, 1.0f, 10);
  REQUIRE(a.size() == 8);
  for (uint32_t t : a) CHECK(t < 300);
  CHECK(s.sample(prompt, 8, 42, 1.0f, 10) == a);
}
