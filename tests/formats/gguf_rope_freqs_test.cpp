// rope_freqs.weight: the converter's float32 values for Llama 3's scaling (bits torch 1.13 gave
// for its generate_extra_tensors arithmetic), within rounding of transformers' rule, and read back
// as the scaling they came from; vectors no llama3 rule gives are refused.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf_rope_freqs.h"

using namespace remat;

namespace {

const Llama3Scaling kLlama32{32.0f, 1.0f, 4.0f, 8192};
constexpr float kTheta32 = 500000.0f;

// The band's values (index, bits) torch 1.13 computed with the converter's expressions
// (factor, low, high, original_ctx, theta, head_dim as below); every other value is 1 or factor.
struct Expected {
  Llama3Scaling s;
  float theta;
  int head_dim;
  std::vector<std::pair<int, uint32_t>> band;
};

std::vector<Expected> converter_values() {
  return {
      {kLlama32, kTheta32, 64, {{15, 0x3fd35ec2}, {16, 0x4052b46f}, {17, 0x411aaaee}}},
      {kLlama32,
       kTheta32,
       128,
       {{29, 0x3f9e126b},
        {30, 0x3fd35ec2},
        {31, 0x4011b4ca},
        {32, 0x4052b46f},
        {33, 0x40a57db9},
        {34, 0x411aaaee}}},
      {{7.0f, 1.5f, 3.0f, 200}, 1000.0f, 32, {{6, 0x3fc5030e}, {7, 0x40baa02d}}},
      {{8.0f, 1.0f, 4.0f, 64}, 100.0f, 16, {{2, 0x3fa5a100}, {3, 0x4030f899}, {4, 0x40f55b38}}},
  };
}

double inv_freq(float theta, int head_dim, int i) {
  return std::pow(double(theta), -2.0 * i / head_dim);
}

// Bits of the RoPE constants the kernels compute from.
std::vector<uint32_t> terms_bits(const Llama3Scaling& s) {
  const RopeScaleTerms t = rope_scale_terms(s);
  return {std::bit_cast<uint32_t>(t.slope), std::bit_cast<uint32_t>(t.offset),
          std::bit_cast<uint32_t>(t.inv_factor)};
}

}  // namespace

TEST_CASE("rope_freqs are the values llama.cpp's converter computes, bit for bit") {
  for (const Expected& e : converter_values()) {
    INFO("head_dim " << e.head_dim << " factor " << e.s.factor);
    const std::vector<float> v = gguf_rope_freqs(e.s, e.theta, e.head_dim);
    REQUIRE(v.size() == std::size_t(e.head_dim / 2));
    std::size_t next = 0;
    for (int i = 0; i < e.head_dim / 2; ++i) {
      INFO("frequency " << i);
      if (next < e.band.size() && e.band[next].first == i) {
        CHECK(std::bit_cast<uint32_t>(v[std::size_t(i)]) == e.band[next++].second);
      } else {
        CHECK((v[std::size_t(i)] == 1.0f || v[std::size_t(i)] == e.s.factor));
        CHECK(v[std::size_t(i)] == (next == 0 ? 1.0f : e.s.factor));
      }
    }
  }
}

TEST_CASE("rope_freqs divide each frequency as transformers' llama3 rule scales it") {
  for (const Expected& e : converter_values()) {
    const std::vector<float> v = gguf_rope_freqs(e.s, e.theta, e.head_dim);
    double worst = 0;
    for (int i = 0; i < e.head_dim / 2; ++i) {
      const double inv = inv_freq(e.theta, e.head_dim, i);
      const double want = inv / llama3_scaled_inv_freq(inv, e.s);
      worst = std::max(worst, std::abs(double(v[std::size_t(i)]) - want) / want);
    }
    INFO("head_dim " << e.head_dim);
    CHECK(worst < 1.0 / (1 << 19));
  }
}

TEST_CASE("rope_freqs read back as the Llama 3 scaling they were written from") {
  SECTION("Llama 3.2 (heads of 64 and 128) and other low_freq_factor 1 configs: the same values") {
    const std::vector<std::pair<Llama3Scaling, std::pair<float, int>>> cases = {
        {kLlama32, {kTheta32, 64}},
        {kLlama32, {kTheta32, 128}},
        {{8.0f, 1.0f, 4.0f, 8192}, {500000.0f, 128}},  // Llama 3.1
        {{8.0f, 1.0f, 4.0f, 64}, {100.0f, 16}},
        {{16.0f, 1.0f, 2.5f, 2048}, {10000.0f, 96}},
        {{3.5f, 1.0f, 8.0f, 1000}, {1e6f, 256}}};
    for (const auto& [s, shape] : cases) {
      INFO("factor " << s.factor << " high " << s.high_freq_factor << " ctx " << s.original_ctx
                     << " head_dim " << shape.second);
      const std::vector<float> v = gguf_rope_freqs(s, shape.first, shape.second);
      const Llama3Scaling r = llama3_scaling_of_rope_freqs(v, shape.first, shape.second);
      CHECK(r == s);
      CHECK(gguf_rope_freqs(r, shape.first, shape.second) == v);  // write-read-write
    }
  }
  SECTION("another low_freq_factor: an equivalent scaling, the same vector and kernel constants") {
    const Llama3Scaling s{7.0f, 1.5f, 3.0f, 200};
    const std::vector<float> v = gguf_rope_freqs(s, 1000.0f, 32);
    const Llama3Scaling r = llama3_scaling_of_rope_freqs(v, 1000.0f, 32);
    CHECK(r.factor == 7.0f);
    CHECK(gguf_rope_freqs(r, 1000.0f, 32) == v);
    CHECK(terms_bits(r) == terms_bits(s));
  }
  SECTION("transformers' rule in double, rounded once: within the tolerance, the same scaling") {
    std::vector<float> v;
    for (int i = 0; i < 64; ++i) {
      const double inv = inv_freq(kTheta32, 128, i);
      v.push_back(float(inv / llama3_scaled_inv_freq(inv, kLlama32)));
    }
    CHECK(v != gguf_rope_freqs(kLlama32, kTheta32, 128));
    CHECK(llama3_scaling_of_rope_freqs(v, kTheta32, 128) == kLlama32);
  }
}

TEST_CASE("rope_freqs with no frequency in the band read as a scaling that gives them") {
  // Frequencies 100^(-i/8): wavelengths 6.3, 11, 20, 35, 63, 112, 199, 353.
  const std::vector<std::vector<float>> vectors = {{1, 1, 1, 1, 8, 8, 8, 8},
                                                   {1, 8, 8, 8, 8, 8, 8, 8},
                                                   {8, 8, 8, 8, 8, 8, 8, 8},
                                                   {1, 1, 1, 1, 1, 1, 1, 2}};
  for (const std::vector<float>& v : vectors) {
    INFO("first " << v[0] << " fifth " << v[4] << " last " << v[7]);
    const Llama3Scaling r = llama3_scaling_of_rope_freqs(v, 100.0f, 16);
    CHECK(r.factor == v.back());
    CHECK(r.low_freq_factor > 0.0f);
    CHECK(r.high_freq_factor > r.low_freq_factor);
    CHECK(r.original_ctx > 0);
    CHECK(gguf_rope_freqs(r, 100.0f, 16) == v);
  }
  // All ones: no scaling at all.
  CHECK(llama3_scaling_of_rope_freqs(std::vector<float>(8, 1.0f), 100.0f, 16) == Llama3Scaling{});
}

TEST_CASE("rope_freqs no llama3 rule gives are refused, naming the tensor") {
  const std::vector<float> good = gguf_rope_freqs(kLlama32, kTheta32, 64);
  auto refused = [](std::vector<float> v, const std::string& why) {
    INFO(why);
    CHECK_THROWS_WITH(
        llama3_scaling_of_rope_freqs(v, kTheta32, 64),
        Catch::Contains("rope_freqs.weight is not Llama 3's rope_scaling") && Catch::Contains(why));
  };
  std::vector<float> v = good;
  v[16] *= 1.0f + 1.0f / (1 << 14);  // one band value 2^-14 off
  refused(v, "reproduce its values");
  v = good;
  v[16] *= 1.0f + 1.0f / (1 << 20);  // within the tolerance: the same scaling
  CHECK(llama3_scaling_of_rope_freqs(v, kTheta32, 64) == kLlama32);
  v = good;
  std::swap(v[15], v[17]);  // not monotone
  refused(v, "reproduce its values");
  v = good;
  v[3] = 2.0f;  // a factor among the unscaled frequencies
  refused(v, "reproduce its values");
  v = good;
  v[0] = 0.5f;
  refused(v, "below 1");
  v = good;
  v[20] = std::nanf("");
  refused(v, "not finite");
  v = good;
  v.pop_back();
  refused(v, "31 values for heads of 64");
  // The same vector read with another base puts the band elsewhere.
  CHECK_THROWS_WITH(llama3_scaling_of_rope_freqs(good, 10000.0f, 64),
                    Catch::Contains("reproduce its values"));
}
