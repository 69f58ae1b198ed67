// What remat writes as GGUF, run by llama.cpp itself (tests/training/llama_cpp_library.h): a model
// a session saved loads in llama.cpp, and llama.cpp's log-probabilities of the next token equal
// remat's forward on the same weights (and miss them when llama's q/k rows are left unpermuted);
// a LoRA adapter a session saved loads with llama_adapter_lora_init and moves llama.cpp's
// log-probabilities to remat's with the adapter, while adapters written wrong (B's q/k rows not
// permuted, the scale doubled, the update transposed) miss them and one stored transposed is
// refused. For llama (q/k rows permuted), qwen2 (q/k/v biases, rows as they are), qwen3 (q/k
// norms, explicit head size), gemma3 (local and global layers, norms stored as 1 + w; missed when
// stored as w) and gpt2 (fused, transposed matrices).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/ignore_target.h"
#include "formats/gguf_model.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_writer.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/llama_cpp_check.h"
#include "tests/training/llama_cpp_library.h"

using namespace remat;
namespace fs = std::filesystem;

#if REMAT_HAVE_LLAMA_H
using namespace remat::test;
namespace {

// Qwen3: q/k norms before RoPE, heads of 24 on a width of 64 (q_proj 96 rows), tied; an MLP as
// wide as the model, so that its matrices are square for the transposed-update check.
ModelConfig qwen3() {
  ModelConfig m = llama(false);
  m.qk_norm = true;
  m.head_size = 24;
  m.ffn = 64;
  m.tied_head = true;
  return m;
}

// Gemma 3: four layers of period 3 (layers 0, 1, 3 local with a window of 3 of the 8 positions,
// layer 2 global), a local RoPE base of its own (100, far from 10000 at a window of 3), linear
// scaling on the global layer, and the query scale llama.cpp assumes (query_pre_attn_scalar = the
// head size, 24).
ModelConfig gemma3() {
  ModelConfig m = qwen3();
  m.layers = 4;
  m.rope_theta = 100000.0f;
  m.norm_eps = 1e-6f;
  m.gemma3 = true;
  m.gemma = {3, 3, 100.0f, 24.0f, 2.0f};
  return m;
}

ModelConfig gpt2() {
  return ModelConfig{2, 64, 4, 80, 32};
}

// A copy of adapter `from` made wrong: alpha times `alpha_factor`; with `unpermute`, B's q/k rows
// back in Hugging Face order (as a writer that forgot llama's RoPE permutation would leave them);
// with `transpose_square`, each square weight's update transposed (A := Bᵀ, B := Aᵀ); with
// `store_a_transposed`, lora_a's dimensions swapped.
struct Wrong {
  double alpha_factor = 1;
  bool unpermute = false, transpose_square = false, store_a_transposed = false;
};
void write_wrong_adapter(const fs::path& from, const fs::path& to, const ModelConfig& m,
                         const Wrong& w) {
  const GgufFile f = GgufFile::open(from);
  GgufMetadata md = f.metadata();
  md.set("adapter.lora.alpha",
         GgufValue::of(float(*md.number("adapter.lora.alpha") * w.alpha_factor)));
  std::vector<GgufTensorSpec> specs;
  std::vector<std::vector<float>> data;
  for (const GgufTensor& t : f.tensors()) {
    std::vector<float> v(t.elements());
    f.read(t, 0, std::as_writable_bytes(std::span(v)));
    specs.push_back({t.name, t.type, t.ne});
    data.push_back(std::move(v));
  }
  for (std::size_t i = 0; i < specs.size(); i += 2) {
    GgufTensorSpec &a = specs[i], &b = specs[i + 1];
    REQUIRE(a.name.ends_with(".lora_a"));
    const uint64_t in = a.ne[0], r = a.ne[1], out = b.ne[1];
    const bool q = b.name.find("attn_q.") != std::string::npos;
    const bool k = b.name.find("attn_k.") != std::string::npos;
    if (w.unpermute && gguf_arch_of(m) == GgufArch::llama && (q || k)) {
      const int heads = q ? m.heads : m.kv_head_count();
      std::vector<float> hf(data[i + 1].size());
      for (uint64_t row = 0; row < out; ++row)
        std::copy_n(&data[i + 1][gguf_row_of(row, out, heads) * r], r, &hf[row * r]);
      data[i + 1] = hf;
    }
    if (w.transpose_square && in == out) {
      std::vector<float> at(in * r), bt(r * out);  // A [r, in] := Bᵀ; B [out, r] := Aᵀ
      for (uint64_t x = 0; x < in; ++x)
        for (uint64_t y = 0; y < r; ++y) {
          at[y * in + x] = data[i + 1][x * r + y];
          bt[x * r + y] = data[i][y * in + x];
        }
      data[i] = at;
      data[i + 1] = bt;
    }
    if (w.store_a_transposed) std::swap(a.ne[0], a.ne[1]);
  }
  GgufWriter out(to, md, specs);
  for (const auto& v : data) out.write(std::span<const float>(v));
  out.commit();
}

}  // namespace
#endif

TEST_CASE("a model remat saved as GGUF runs in llama.cpp with remat's log-probabilities") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("gguf_llama_cpp_model");
  for (const ModelConfig& m : {llama(false), llama(true), gpt2(), qwen3(), gemma3()}) {
    INFO(label(m));
    Session s(test::device(), config(m, 0));
    load_random_weights(s, d.path());
    save_checkpoint(s, d / "m.gguf");
    test::LlamaCppModel model(*l, d / "m.gguf");
    REQUIRE(model.loaded());
    const Reference r = remat_reference(s);
    const double worst = worst_difference(model, r, m.vocab);
    std::printf("llama.cpp %s model: worst |log p difference| %.3g over %zu values\n",
                label(m).c_str(), worst, r.log_p.size() * r.log_p[0].size());
    CHECK(worst < tolerance(m));
    if (m.gemma3) {
      // The check sees the norm offset forgotten: the same file with each gain stored as w.
      rewrite_gguf(d / "m.gguf", d / "w.gguf", [](const GgufTensor& t, std::vector<float>& v) {
        if (t.name.ends_with("norm.weight"))
          for (float& x : v) x -= 1.0f;
      });
      test::LlamaCppModel unshifted(*l, d / "w.gguf");
      REQUIRE(unshifted.loaded());
      const double off = worst_difference(unshifted, r, m.vocab);
      std::printf(
          "llama.cpp gemma3 model with its norms stored as w: worst |log p difference| %.3g\n",
          off);
      CHECK(off > 10 * tolerance(m));
      // And each layer key llama.cpp reads: the file without it runs another model.
      const std::pair<const char*, std::vector<std::string>> keys[] = {
          {"no window", {"attention.sliding_window"}},
          {"no period (6: every layer local)", {"attention.sliding_window_pattern"}},
          {"no local RoPE base (10000)", {"rope.freq_base_swa"}},
          {"no linear scaling", {"rope.scaling.type", "rope.scaling.factor"}}};
      for (const auto& [what, erased] : keys) {
        rewrite_gguf(
            d / "m.gguf", d / "k.gguf", [](const GgufTensor&, std::vector<float>&) {},
            [&](GgufMetadata& md) {
              for (const std::string& k : erased) md.erase("gemma3." + k);
            });
        test::LlamaCppModel other(*l, d / "k.gguf");
        REQUIRE(other.loaded());
        const double miss = worst_difference(other, r, m.vocab);
        std::printf("llama.cpp gemma3 model with %s: worst |log p difference| %.3g\n", what, miss);
        CHECK(miss > 10 * tolerance(m));
      }
    }
    if (gguf_arch_of(m) != GgufArch::llama) continue;
    // The check sees a layout error: the same file with q/k rows left in Hugging Face order.
    rewrite_gguf(
        d / "m.gguf", d / "unpermuted.gguf", [&](const GgufTensor& t, std::vector<float>& v) {
          const bool q = t.name.ends_with("attn_q.weight"), k = t.name.ends_with("attn_k.weight");
          if (!q && !k) return;
          std::vector<float> hf(v.size());
          const uint64_t rows = t.rows(), cols = t.ne[0];
          for (uint64_t r = 0; r < rows; ++r)
            std::copy_n(&v[gguf_row_of(r, rows, q ? m.heads : m.kv_head_count()) * cols], cols,
                        &hf[r * cols]);
          v = hf;
        });
    test::LlamaCppModel unpermuted(*l, d / "unpermuted.gguf");
    REQUIRE(unpermuted.loaded());
    const double off = worst_difference(unpermuted, r, m.vocab);
    std::printf("llama.cpp llama model with q/k rows unpermuted: worst |log p difference| %.3g\n",
                off);
    CHECK(off > 10 * tolerance(m));
  }
#else
  test::llama_cpp();
#endif
}

TEST_CASE("a LoRA adapter remat saved as GGUF moves llama.cpp to remat's log-probabilities") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("gguf_llama_cpp_adapter");
  for (const ModelConfig& m : {llama(false), llama(true), gpt2(), qwen3(), gemma3()}) {
    INFO(label(m));
    Session s(test::device(), config(m, 4));
    load_random_weights(s, d.path());
    randomize_adapters(s);
    save_checkpoint(s, d / "base.gguf");  // under LoRA: the frozen base
    save_adapter(s, d / "a.gguf", "");
    test::LlamaCppModel model(*l, d / "base.gguf");
    REQUIRE(model.loaded());
    const Reference r = remat_reference(s);
    // Without the adapter llama.cpp runs the base, which is far from remat with it.
    const double base = worst_difference(model, r, m.vocab);
    llama_adapter_lora* adapter = model.adapter(d / "a.gguf");
    REQUIRE(adapter != nullptr);
    const double worst = worst_difference(model, r, m.vocab, adapter);
    std::printf("llama.cpp %s adapter: worst |log p difference| %.3g (base alone: %.3g)\n",
                label(m).c_str(), worst, base);
    CHECK(worst < tolerance(m));
    CHECK(base > 10 * tolerance(m));
    if (m.gemma3) {  // --merge-out: the adapters folded into the base, run without them
      save_merged(s, d / "merged.gguf");
      test::LlamaCppModel merged(*l, d / "merged.gguf");
      REQUIRE(merged.loaded());
      const double off = worst_difference(merged, r, m.vocab);
      std::printf("llama.cpp gemma3 merged model: worst |log p difference| %.3g\n", off);
      CHECK(off < tolerance(m));
    }

    std::vector<std::pair<std::string, Wrong>> wrongs = {{"the scale doubled", {2.0}},
                                                         {"updates transposed", {1, false, true}}};
    if (gguf_arch_of(m) == GgufArch::llama)
      wrongs.push_back({"B's q/k rows not permuted", {1, true}});
    for (const auto& [what, w] : wrongs) {
      INFO(what);
      write_wrong_adapter(d / "a.gguf", d / "wrong.gguf", m, w);
      llama_adapter_lora* bad = model.adapter(d / "wrong.gguf");
      REQUIRE(bad != nullptr);
      const double off = worst_difference(model, r, m.vocab, bad);
      std::printf("llama.cpp %s adapter with %s: worst |log p difference| %.3g\n", label(m).c_str(),
                  what.c_str(), off);
      CHECK(off > 10 * tolerance(m));
    }
    write_wrong_adapter(d / "a.gguf", d / "wrong.gguf", m, {1, false, false, true});
    CHECK(model.adapter(d / "wrong.gguf") == nullptr);
  }
#else
  test::llama_cpp();
#endif
}

#if REMAT_HAVE_LLAMA_H
namespace {

// QLoRA on `m` saved by remat and quantized by llama.cpp to Q8_0 and Q4_K_M: every quantized
// matrix kept in blocks, and the adapter trained on them run by llama.cpp.
void check_qlora_in_llama_cpp(const test::LlamaCpp& lib, const ModelConfig& m) {
  const test::LlamaCpp* l = &lib;
  test::TempFolder d("gguf_llama_cpp_qlora_" + label(m));
  {
    Session full(test::device(), config(m, 0));
    load_random_weights(full, d.path());
    save_checkpoint(full, d / "f32.gguf");
  }
  const std::pair<const char*, llama_ftype> presets[] = {{"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
                                                         {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}};
  for (const auto& [name, ftype] : presets) {
    INFO(label(m) << " " << name);
    const fs::path q = d / (std::string(name) + ".gguf");
    llama_model_quantize_params qp = l->quantize_default_params();
    qp.ftype = ftype;
    qp.nthread = 2;
    REQUIRE(l->quantize((d / "f32.gguf").c_str(), q.c_str(), &qp) == 0);
    const GgufWeights g(GgufFile::open(q));
    SessionConfig c = config(m, 4);
    c.shape.block_weights = g.block_weights();
    std::string types;
    for (const BlockWeight& b : c.shape.block_weights)
      if (types.find(b.format.name) == std::string::npos) types += " " + b.format.name;
    Session s(test::device(), c);
    s.load(q);
    int kept = 0;
    for (TensorId id : s.plan().frozen)
      kept += s.plan().tensors[std::size_t(id)].tensor.dtype == DType::blocks;
    // Llama: the projections, the untied head, the token embedding; gpt2: its four matrices
    // (held as the file's [out, in] rows) and the tied token embedding.
    const bool gpt2 = m.arch == Architecture::gpt2;
    CHECK(kept == (gpt2 ? 4 * m.layers + 1 : 7 * m.layers + 2));
    CHECK(std::size_t(kept) == c.shape.block_weights.size());
    // Two steps of training on the blocks, then the adapter as GGUF.
    for (uint32_t step = 0; step < 2; ++step)
      s.step(test::random_indices(kSeq, 30 + step, uint32_t(m.vocab)),
             test::random_indices(kSeq, 40 + step, uint32_t(m.vocab)));
    randomize_adapters(s);
    save_adapter(s, d / "a.gguf", "");
    const Reference r = remat_reference(s);
    // llama.cpp on the values remat's blocks decode to, saved as an F32 GGUF, with the adapter:
    // the same model, so as close as any float model.
    save_checkpoint(s, d / "decoded.gguf");  // under LoRA: the frozen base, decoded
    test::LlamaCppModel decoded(*l, d / "decoded.gguf");
    REQUIRE(decoded.loaded());
    llama_adapter_lora* on_decoded = decoded.adapter(d / "a.gguf");
    REQUIRE(on_decoded != nullptr);
    const double exact = worst_difference(decoded, r, m.vocab, on_decoded);
    // llama.cpp on the quantized file itself.
    test::LlamaCppModel model(*l, q);
    REQUIRE(model.loaded());
    const double base = worst_difference(model, r, m.vocab);
    llama_adapter_lora* adapter = model.adapter(d / "a.gguf");
    REQUIRE(adapter != nullptr);
    const double worst = worst_difference(model, r, m.vocab, adapter);
    std::printf(
        "llama.cpp %s %s base (%s) with remat's QLoRA adapter: worst |log p difference| %.3g on "
        "the decoded base, %.3g on the quantized file (base alone: %.3g)\n",
        label(m).c_str(), name, types.c_str() + 1, exact, worst, base);
    CHECK(exact < tolerance(m));
    // On the quantized file llama.cpp's CPU path multiplies the blocks with activations rounded
    // to 8 bits (ggml's vec_dot_type q8_K / q8_0): with these large random weights (logits of
    // tens) that moves log-probabilities by up to about 0.8; remat multiplies the decoded
    // weights in f32, as llama.cpp does on the decoded base above. Without the adapter the
    // difference is ten times larger.
    CHECK(worst < 1.0);
    CHECK(base > 8 * worst);
  }
}

}  // namespace
#endif

TEST_CASE(
    "QLoRA on a base llama.cpp quantized: an adapter trained on its blocks runs in llama.cpp") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  // Rows of 256 values, so the K-quants apply (llama.cpp falls back for other widths).
  ModelConfig llama_256 = llama(false), gpt2_256 = gpt2();
  llama_256.dim = gpt2_256.dim = 256;
  llama_256.ffn = 512;
  for (const ModelConfig& m : {llama_256, gpt2_256}) check_qlora_in_llama_cpp(*l, m);
#else
  test::llama_cpp();
#endif
}

TEST_CASE("QLoRA on a gemma3 base llama.cpp quantized: matrices stay blocks, norms stay F32") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("gguf_llama_cpp_gemma3_qlora");
  // Rows of 256 values, so the K-quants apply.
  ModelConfig m = gemma3();
  m.dim = 256;
  m.head_size = 0;  // 64, the width per head, as a file reads back
  m.gemma.query_scalar = 64.0f;
  m.ffn = 256;
  {
    Session full(test::device(), config(m, 0));
    load_random_weights(full, d.path());
    save_checkpoint(full, d / "f32.gguf");
  }
  const std::pair<const char*, llama_ftype> presets[] = {{"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
                                                         {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}};
  for (const auto& [name, ftype] : presets) {
    INFO(name);
    const fs::path q = d / (std::string(name) + ".gguf");
    llama_model_quantize_params qp = l->quantize_default_params();
    qp.ftype = ftype;
    qp.nthread = 2;
    REQUIRE(l->quantize((d / "f32.gguf").c_str(), q.c_str(), &qp) == 0);
    const GgufWeights g(GgufFile::open(q));
    CHECK(g.model() == m);
    SessionConfig c = config(m, 4);
    c.shape.block_weights = g.block_weights();
    Session s(test::device(), c);
    s.load(q);
    int kept = 0;
    for (TensorId id : s.plan().frozen)
      kept += s.plan().tensors[std::size_t(id)].tensor.dtype == DType::blocks;
    // The projections, and the token embedding (Gemma's scaled gather and the tied head).
    CHECK(kept == 7 * m.layers + 1);
    CHECK(std::size_t(kept) == c.shape.block_weights.size());
    s.step(test::random_indices(kSeq, 30, uint32_t(m.vocab)),
           test::random_indices(kSeq, 40, uint32_t(m.vocab)));
    randomize_adapters(s);
    save_adapter(s, d / "a.gguf", "");
    const Reference r = remat_reference(s);
    // llama.cpp on the values remat's blocks decode to (norms written back as gains), with the
    // adapter: the same model.
    save_checkpoint(s, d / "decoded.gguf");
    test::LlamaCppModel decoded(*l, d / "decoded.gguf");
    REQUIRE(decoded.loaded());
    llama_adapter_lora* adapter = decoded.adapter(d / "a.gguf");
    REQUIRE(adapter != nullptr);
    const double worst = worst_difference(decoded, r, m.vocab, adapter);
    std::printf(
        "llama.cpp gemma3 %s base decoded, with remat's QLoRA adapter: worst |log p "
        "difference| %.3g\n",
        name, worst);
    CHECK(worst < tolerance(m));
  }
#else
  test::llama_cpp();
#endif
}
