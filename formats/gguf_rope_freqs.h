// Llama 3's RoPE scaling in a GGUF file. llama.cpp's converter (convert_hf_to_gguf.py, the llama
// model's generate_extra_tensors) writes no rope.scaling.* key for rope_type "llama3": it stores
// one F32 tensor, rope_freqs.weight of head_dim / 2 values, the factor llama.cpp divides each
// frequency by (1 above the band, `factor` below it, 1 / ((1 - smooth) / factor + smooth) in it).
// remat writes that vector as the converter computes it and reads a file's vector back as the
// Llama3Scaling it came from, refusing a vector that no llama3 rule reproduces.
#pragma once

#include <span>
#include <vector>

#include "graph/rope_scaling.h"

namespace remat {

inline constexpr const char* kGgufRopeFreqs = "rope_freqs.weight";

// The converter's rope_freqs for scaling `s` (rope_type llama3, not linear) on heads of
// `head_dim` with RoPE base `theta`, computed as it computes them: in float32, operation by
// operation as torch does them (a scalar divided by a tensor is the reciprocal times the scalar),
// from frequencies 1 / theta^(2i / head_dim). The power is rounded correctly here; torch's
// vectorised powf may be an ulp off, and then the converter's value differs from this by a few
// ulps (at most 2^-19.6 relative in 2,000 random configurations against torch 1.13).
std::vector<float> gguf_rope_freqs(const Llama3Scaling& s, float theta, int head_dim);

// The relative difference up to which a stored value counts as the recomputed one: the
// converter's float32 arithmetic on another machine (its powf) differs from gguf_rope_freqs by at
// most 2^-19.6, and the transformers rule in double rounded once by at most 2^-17.3; a rule that
// differs in earnest (original_max_position_embeddings off by one in 8192) moves the band's
// values by more than 2^-12.
inline constexpr double kRopeFreqsTolerance = 1.0 / 65536;  // 2^-16

// The llama3 scaling whose rope_freqs (gguf_rope_freqs) equal `v` within kRopeFreqsTolerance, for
// heads of `head_dim` (v.size() == head_dim / 2) and RoPE base `theta`; factor 0 (no scaling) for
// a vector of ones. std::invalid_argument when no llama3 rule reproduces `v`.
//
// Only factor and the band's line are determined by the values: the band's smooth_i = (1 / v_i -
// 1 / factor) / (1 - 1 / factor) equals inv_freq_i · slope - offset (graph/rope_scaling.h), and
// (low, high, original_ctx) times any λ gives the same slope and offset. The parameters chosen are
// the simplest that reproduce the vector: low_freq_factor 1 (every Llama 3.x config) before the
// other quarters in (0, 8], original_ctx the nearest integer on the line, and high_freq_factor
// with the fewest binary digits. So a vector remat wrote for low_freq_factor 1 reads back as
// the same Llama3Scaling (when two band values or more fix the band's line); for another it may
// read back as an equivalent one, (1.5, 3, 200) as (0.75, 1.5, 100): the same slope and offset,
// the same rope_freqs, and the same RopeScaleTerms bits where λ is a power of two.
Llama3Scaling llama3_scaling_of_rope_freqs(std::span<const float> v, float theta, int head_dim);

}  // namespace remat
