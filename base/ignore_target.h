// The target id that marks a position as not trained: its loss is 0, its logits get no gradient,
// and it is not counted in the mean loss. Data pipelines (prompt masking, padding) write it; the
// cross-entropy kernels read it (shaders/cross_entropy_params.h defines the same value for GLSL
// and checks it against this one). Hugging Face uses -100 for the same purpose; token ids here are
// unsigned, so the largest value, which no vocabulary reaches, is used instead.
#pragma once

#include <cstdint>

namespace remat {

inline constexpr uint32_t kIgnoreTarget = 0xFFFFFFFFu;

}  // namespace remat
