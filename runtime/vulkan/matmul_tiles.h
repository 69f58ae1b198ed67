// Register tiles of the texel matmul kernels (matmul_outer_texels.comp, matmul_dot_texels.comp),
// chosen per device and per shape class instead of one machine's constants. Pure C++: the
// choice is a table; runtime/matmul_tuning fills it by measuring, plan_device from device facts.
//
// A tile never changes a result bit. It decides which invocation computes which outputs; each
// output is still one fma chain over the reduction in ascending r, started from 0 (or from C's
// old value when a sum continues), with the bias and an accumulated C added after the chain, in
// every kernel and for every tile. tests/kernels/matmul_tiles_test.cpp runs every candidate.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace remat {

enum class TexelMatmul : uint32_t {
  outer = 0,  // matmul_outer_texels.comp: sums of outer products, Y and C vec4 along j
  dot = 1,    // matmul_dot_texels.comp: dot products, X and Y vec4 along r
};

struct MatmulTile {
  uint32_t rows = 0;  // output rows per invocation (TI)
  uint32_t cols = 0;  // outer: vec4 columns per invocation (TJ4); dot: columns (TJ)
  uint32_t wx = 0;    // invocations per workgroup (local_size_x)
  friend auto operator<=>(const MatmulTile&, const MatmulTile&) = default;
};

// What one tile choice is made for: the kernel, outer's X fetch mode (its X_MODE constant, a
// separate pipeline), and the size class of the output's rows I and columns J and of the
// reduction R.
struct MatmulClass {
  TexelMatmul kernel = TexelMatmul::outer;
  uint32_t x_mode = 0;  // outer: X_MODE 0-4; dot: 0
  uint32_t rows = 0, cols = 0, reduction = 0;
  friend auto operator<=>(const MatmulClass&, const MatmulClass&) = default;
};

// 0: up to 128, 1: up to 512, 2: more. Coarse on purpose: every class costs a measurement, and
// runtime/matmul_tuning times each class on a probe of at most 512 in each extent, so larger
// extents would measure the same probe again.
uint32_t size_class(uint32_t extent);
MatmulClass matmul_class(TexelMatmul kernel, uint32_t x_mode, uint32_t I, uint32_t J, uint32_t R);

// "outer.x0.i1.j3.r2": the class in the tile file; parse_matmul_class inverts it (nullopt for
// anything else).
std::string matmul_class_key(const MatmulClass& c);
std::optional<MatmulClass> parse_matmul_class(std::string_view key);

// The tiles a measurement chooses from, best guess first. Few on purpose: on lavapipe each is a
// pipeline compiled at its first dispatch (seconds of LLVM).
std::span<const MatmulTile> matmul_tile_candidates(TexelMatmul kernel);
// Whether the kernel can run `t` in fetch mode `x_mode` (rows and columns at most 16, the
// shaders' MAX_T; X_MODE 1 and 4 read four rows per fetch, so rows is a multiple of 4).
bool matmul_tile_fits(TexelMatmul kernel, uint32_t x_mode, const MatmulTile& t);

struct MatmulTiling {
  MatmulTile outer;                          // every class of the outer kernel not in `chosen`
  MatmulTile dot;                            // every class of the dot kernel not in `chosen`
  std::map<MatmulClass, MatmulTile> chosen;  // measured on this device
  // Subgroup lanes that share X's fetches (shaders/shared_x.glsl): the device's subgroup size
  // where it runs compute subgroups of exactly that size with shuffles, else 0. Used by tiles
  // whose rows and workgroup it divides, in the dot kernel and every outer X_MODE but 2.
  uint32_t shared_x_lanes = 0;
  MatmulTile tile(const MatmulClass& c) const;
};

// From device facts alone, where nothing was measured: `simd_lanes` invocations run side by side
// in one SIMD register (a CPU driver's vector width in floats, a GPU's subgroup size; 0 if
// unknown), so workgroups are whole multiples of it.
MatmulTiling default_matmul_tiling(uint32_t simd_lanes);

}  // namespace remat
