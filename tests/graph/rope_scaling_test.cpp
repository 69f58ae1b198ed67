// Llama 3's RoPE frequency scaling: the clamp form the kernels evaluate is transformers' rule,
// branch for branch, and no scaling leaves every frequency as it was.
#include "graph/rope_scaling.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace remat;

namespace {

// The kernels' form (graph/rope_scaling.h) in double, from the float constants.
double clamp_form(double inv_freq, const RopeScaleTerms& k) {
  const double s = std::fmin(std::fmax(inv_freq * k.slope - k.offset, 0.0), 1.0);
  return inv_freq * (k.inv_factor + s * (1.0 - k.inv_factor));
}

TEST_CASE("llama3 scaling: the clamp form equals transformers' three branches", "[graph]") {
  const Llama3Scaling llama32{32.0f, 1.0f, 4.0f, 8192};
  const RopeScaleTerms k = rope_scale_terms(llama32);
  int low = 0, high = 0, blended = 0;
  for (int i = 0; i < 64; ++i) {
    const double inv_freq = std::pow(500000.0, -2.0 * i / 128.0);
    const double want = llama3_scaled_inv_freq(inv_freq, llama32);
    const double wavelen = 2 * M_PI / inv_freq;
    if (wavelen > 8192.0) {
      ++low;
      CHECK(want == inv_freq / 32);
    } else if (wavelen < 2048.0) {
      ++high;
      CHECK(want == inv_freq);
    } else {
      ++blended;
    }
    INFO("i " << i);
    // The constants are floats: relative 2^-24 each, through s into the scale.
    CHECK(std::abs(clamp_form(inv_freq, k) - want) <= 4e-7 * want * 32);
  }
  // Llama 3.2's 64 frequencies fall in all three bands.
  CHECK(low > 0);
  CHECK(high > 0);
  CHECK(blended > 0);
}

TEST_CASE("no scaling: the kernels' terms leave the frequency exactly as it was", "[graph]") {
  const RopeScaleTerms k = rope_scale_terms({});
  CHECK(k.slope == 0.0f);
  CHECK(k.offset == 0.0f);
  CHECK(k.inv_factor == 1.0f);
  for (float f : {1.0f, 0.1f, 3.7e-6f}) {
    const float s = std::fmin(std::fmax(f * k.slope - k.offset, 0.0f), 1.0f);
    CHECK(f * (k.inv_factor + s * (1.0f - k.inv_factor)) == f);
  }
  CHECK(llama3_scaled_inv_freq(0.25, {}) == 0.25);
}

TEST_CASE("linear scaling: every frequency times 1/factor, no band", "[graph]") {
  const RopeScaleTerms k = rope_scale_terms(linear_scaling(8.0f));
  CHECK(k.slope == 0.0f);
  CHECK(k.offset == 0.0f);
  CHECK(k.inv_factor == 0.125f);
  CHECK(is_linear_scaling(linear_scaling(8.0f)));
  CHECK_FALSE(is_linear_scaling({}));
  CHECK_FALSE(is_linear_scaling({32.0f, 1.0f, 4.0f, 8192}));
  for (double f : {1.0, 0.1, 3.7e-6})
    CHECK(llama3_scaled_inv_freq(f, linear_scaling(8.0f)) == f / 8);
}

TEST_CASE("llama3 terms are Llama 3.2's constants", "[graph]") {
  const RopeScaleTerms k = rope_scale_terms({32.0f, 1.0f, 4.0f, 8192});
  CHECK(k.slope == static_cast<float>(8192.0 / (2 * M_PI * 3)));
  CHECK(k.offset == static_cast<float>(1.0 / 3));
  CHECK(k.inv_factor == 1.0f / 32);
}

}  // namespace
