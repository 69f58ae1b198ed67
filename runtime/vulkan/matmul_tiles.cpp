#include "runtime/vulkan/matmul_tiles.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace remat {

namespace {

constexpr uint32_t kMaxTile = 16;  // MAX_T in both shaders
constexpr uint32_t kSizeClasses = 3;

// Outer: 16x8 output floats per invocation and 8x8, in workgroups of 8 or 16 invocations. Dot:
// 16x8 and 16x4 outputs over 32 invocations (16x4 wastes no lanes where J is only 128), and 8x4
// over 16. On llvmpipe each won some GPT-2-small or tiny shape (docs/benchmarks-speed.md); which one
// wins depends on the CPU and the shape.
constexpr std::array<MatmulTile, 3> kOuterCandidates{{{16, 2, 8}, {8, 2, 8}, {8, 2, 16}}};
constexpr std::array<MatmulTile, 3> kDotCandidates{{{16, 8, 32}, {16, 4, 32}, {8, 4, 16}}};

const char* kernel_word(TexelMatmul k) {
  return k == TexelMatmul::outer ? "outer" : "dot";
}

// Reads `prefix` then a decimal number off the front of `s`.
bool take_field(std::string_view& s, std::string_view prefix, uint32_t& out) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return true;
}

}  // namespace

uint32_t size_class(uint32_t extent) {
  uint32_t c = 0;
  for (uint64_t limit = 128; c + 1 < kSizeClasses && extent > limit; limit *= 4) ++c;
  return c;
}

MatmulClass matmul_class(TexelMatmul kernel, uint32_t x_mode, uint32_t I, uint32_t J, uint32_t R) {
  return {kernel, kernel == TexelMatmul::outer ? x_mode : 0, size_class(I), size_class(J),
          size_class(R)};
}

std::string matmul_class_key(const MatmulClass& c) {
  return std::string(kernel_word(c.kernel)) + ".x" + std::to_string(c.x_mode) + ".i" +
         std::to_string(c.rows) + ".j" + std::to_string(c.cols) + ".r" +
         std::to_string(c.reduction);
}

std::optional<MatmulClass> parse_matmul_class(std::string_view key) {
  MatmulClass c;
  for (TexelMatmul k : {TexelMatmul::outer, TexelMatmul::dot}) {
    const std::string_view word = kernel_word(k);
    if (key.substr(0, word.size()) == word) {
      c.kernel = k;
      key.remove_prefix(word.size());
      break;
    }
    if (k == TexelMatmul::dot) return std::nullopt;
  }
  if (!take_field(key, ".x", c.x_mode) || !take_field(key, ".i", c.rows) ||
      !take_field(key, ".j", c.cols) || !take_field(key, ".r", c.reduction) || !key.empty())
    return std::nullopt;
  const uint32_t modes = c.kernel == TexelMatmul::outer ? 5 : 1;
  if (c.x_mode >= modes || c.rows >= kSizeClasses || c.cols >= kSizeClasses ||
      c.reduction >= kSizeClasses)
    return std::nullopt;
  return c;
}

std::span<const MatmulTile> matmul_tile_candidates(TexelMatmul kernel) {
  if (kernel == TexelMatmul::outer) return kOuterCandidates;
  return kDotCandidates;
}

bool matmul_tile_fits(TexelMatmul kernel, uint32_t x_mode, const MatmulTile& t) {
  if (t.rows == 0 || t.cols == 0 || t.wx == 0 || t.rows > kMaxTile || t.cols > kMaxTile)
    return false;
  const bool four_rows_per_fetch = kernel == TexelMatmul::outer && (x_mode == 1 || x_mode == 4);
  return !four_rows_per_fetch || t.rows % 4 == 0;
}

MatmulTile MatmulTiling::tile(const MatmulClass& c) const {
  if (auto it = chosen.find(c); it != chosen.end()) return it->second;
  return c.kernel == TexelMatmul::outer ? outer : dot;
}

MatmulTiling default_matmul_tiling(uint32_t simd_lanes) {
  // 16x8 outputs per invocation amortise each fetch over 32 or more FMAs and were fastest on
  // llvmpipe at GPT-2-small shapes; a workgroup is one SIMD register of invocations (outer) or
  // four of them (dot, whose columns interleave across the workgroup).
  const uint32_t lanes = std::clamp<uint32_t>(simd_lanes, 1, 64);
  const uint32_t wx = simd_lanes ? lanes : 8;
  return {{16, 2, wx}, {16, 8, 4 * wx}, {}};
}

}  // namespace remat
