// Llama 3's RoPE scaling through GGUF, run by llama.cpp itself: a llama model with llama3 scaling
// saved by a session carries rope_freqs.weight (formats/gguf_rope_freqs.h), loads in llama.cpp,
// and llama.cpp's next-token log-probabilities equal remat's forward; the same file with every
// factor 1 (the scaling dropped), or with the band's factors at factor, misses them. A LoRA adapter
// saved on such a base moves llama.cpp to remat's log-probabilities too, and so does the model
// merged from them (--merge-out). The model's RoPE base and original context are small, so that
// at the test's eight positions the frequencies fall in all three regions of the rule and the
// scaled ones turn by a visible angle.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "formats/gguf_model.h"
#include "formats/gguf_rope_freqs.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/llama_cpp_check.h"
#include "tests/training/llama_cpp_library.h"

using namespace remat;

#if REMAT_HAVE_LLAMA_H
namespace {

// Heads of 16 at base 100: wavelengths 6.3, 11, 20, 35, 63, 112, 199 and 353. With an original
// context of 64, low 1 and high 4 the first two are unscaled (below 16), the next three in the
// band and the last three divided by 8: at position 7 the sixth frequency turns 0.39 rad
// unscaled, 0.05 scaled.
ModelConfig llama3() {
  ModelConfig m = test::llama(false);
  m.rope_theta = 100.0f;
  m.rope_scaling = RopeScaling::llama3;
  m.llama3 = {8.0f, 1.0f, 4.0f, 64};
  return m;
}

}  // namespace
#endif

TEST_CASE("a llama3-scaled model remat saved as GGUF runs in llama.cpp with its rope_freqs") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("gguf_llama_cpp_llama3");
  const ModelConfig m = llama3();
  const std::vector<float> freqs = gguf_rope_freqs(m.llama3, m.rope_theta, m.head_dim());
  REQUIRE(freqs == std::vector<float>{1, 1, freqs[2], freqs[3], freqs[4], 8, 8, 8});
  Session s(test::device(), test::config(m, 0));
  test::load_random_weights(s, d.path());
  save_checkpoint(s, d / "m.gguf");
  CHECK(GgufWeights(GgufFile::open(d / "m.gguf")).model() == m);
  test::LlamaCppModel model(*l, d / "m.gguf");
  REQUIRE(model.loaded());
  const test::Reference r = test::remat_reference(s);
  const double worst = test::worst_difference(model, r, m.vocab);
  std::printf("llama.cpp llama3-scaled model: worst |log p difference| %.3g over %zu values\n",
              worst, r.log_p.size() * r.log_p[0].size());
  CHECK(worst < test::tolerance(m));
  // The check sees the scaling dropped: the same file with every factor 1.
  test::rewrite_gguf(d / "m.gguf", d / "unscaled.gguf",
                     [](const GgufTensor& t, std::vector<float>& v) {
                       if (t.name == kGgufRopeFreqs) std::fill(v.begin(), v.end(), 1.0f);
                     });
  test::LlamaCppModel unscaled(*l, d / "unscaled.gguf");
  REQUIRE(unscaled.loaded());
  const double off = test::worst_difference(unscaled, r, m.vocab);
  std::printf("llama.cpp llama3-scaled model with every factor 1: worst |log p difference| %.3g\n",
              off);
  CHECK(off > 10 * test::tolerance(m));
  // And the band itself: the same file with the band's three factors at factor (the rule without
  // its smooth interpolation, every frequency past original_ctx / high divided by 8).
  test::rewrite_gguf(d / "m.gguf", d / "no_band.gguf",
                     [&](const GgufTensor& t, std::vector<float>& v) {
                       if (t.name == kGgufRopeFreqs) std::fill(v.begin() + 2, v.end(), 8.0f);
                     });
  test::LlamaCppModel no_band(*l, d / "no_band.gguf");
  REQUIRE(no_band.loaded());
  const double band = test::worst_difference(no_band, r, m.vocab);
  std::printf(
      "llama.cpp llama3-scaled model with the band at factor: worst |log p difference| %.3g\n",
      band);
  CHECK(band > 10 * test::tolerance(m));
#else
  test::llama_cpp();
#endif
}

TEST_CASE("a LoRA adapter on a llama3-scaled base moves llama.cpp to remat's log-probabilities") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("gguf_llama_cpp_llama3_adapter");
  const ModelConfig m = llama3();
  Session s(test::device(), test::config(m, 4));
  test::load_random_weights(s, d.path());
  test::randomize_adapters(s);
  save_checkpoint(s, d / "base.gguf");  // under LoRA: the frozen base, with rope_freqs
  save_adapter(s, d / "a.gguf", "");
  test::LlamaCppModel model(*l, d / "base.gguf");
  REQUIRE(model.loaded());
  const test::Reference r = test::remat_reference(s);
  const double base = test::worst_difference(model, r, m.vocab);
  llama_adapter_lora* adapter = model.adapter(d / "a.gguf");
  REQUIRE(adapter != nullptr);
  const double worst = test::worst_difference(model, r, m.vocab, adapter);
  std::printf("llama.cpp llama3-scaled adapter: worst |log p difference| %.3g (base alone: %.3g)\n",
              worst, base);
  CHECK(worst < test::tolerance(m));
  CHECK(base > 10 * test::tolerance(m));
  // --merge-out: the adapters folded into the base, rope_freqs with it, run without them.
  save_merged(s, d / "merged.gguf");
  REQUIRE(GgufFile::open(d / "merged.gguf").tensor(kGgufRopeFreqs) != nullptr);
  test::LlamaCppModel merged(*l, d / "merged.gguf");
  REQUIRE(merged.loaded());
  const double folded = test::worst_difference(merged, r, m.vocab);
  std::printf("llama.cpp llama3-scaled merged model: worst |log p difference| %.3g\n", folded);
  CHECK(folded < test::tolerance(m));
#else
  test::llama_cpp();
#endif
}
