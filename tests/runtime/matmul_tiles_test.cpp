// Shape classes, candidate tiles and the default tiling of the texel matmuls (pure decisions; the
// bits every tile gives are checked in tests/kernels/matmul_tile_bits_test.cpp).
#include <catch2/catch.hpp>

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/matmul_tiles.h"

using namespace remat;

TEST_CASE("size classes split extents at 128 and 512") {
  CHECK(size_class(1) == 0);
  CHECK(size_class(128) == 0);
  CHECK(size_class(129) == 1);
  CHECK(size_class(512) == 1);
  CHECK(size_class(513) == 2);
  CHECK(size_class(50257) == 2);
  CHECK(size_class(UINT32_MAX) == 2);
  // GPT-2 small at B=4, T=64: c_fc's forward and its weight gradient.
  const MatmulClass fwd = matmul_class(TexelMatmul::outer, 0, 256, 3072, 768);
  CHECK(fwd == MatmulClass{TexelMatmul::outer, 0, 1, 2, 2});
  CHECK(matmul_class(TexelMatmul::outer, 1, 768, 3072, 256) ==
        MatmulClass{TexelMatmul::outer, 1, 2, 2, 1});
  // The dot kernel has no fetch modes.
  CHECK(matmul_class(TexelMatmul::dot, 3, 256, 768, 3072).x_mode == 0);
}

TEST_CASE("a shape class's key reads back as the same class, and nothing else does") {
  for (TexelMatmul k : {TexelMatmul::outer, TexelMatmul::dot})
    for (uint32_t mode = 0; mode < (k == TexelMatmul::outer ? 5u : 1u); ++mode)
      for (uint32_t i = 0; i < 3; ++i) {
        const MatmulClass c{k, mode, i, 2 - i, (i + 1) % 3};
        const auto back = parse_matmul_class(matmul_class_key(c));
        REQUIRE(back.has_value());
        CHECK(*back == c);
      }
  CHECK(matmul_class_key({TexelMatmul::outer, 3, 1, 2, 0}) == "outer.x3.i1.j2.r0");
  for (const char* bad : {"", "outer", "outer.x0.i1.j2", "outer.x0.i1.j2.r1.", "outer.x5.i1.j2.r1",
                          "dot.x1.i1.j2.r1", "outer.x0.i3.j2.r1", "inner.x0.i1.j2.r1",
                          "outer.x0.i1.j2.r-1", "outer.x0.i1.j2.rz", "dot.x0.i1.j2.r1 "})
    CHECK_FALSE(parse_matmul_class(bad).has_value());
}

TEST_CASE("tiles fit a kernel within the shaders' 16 and whole fetches of four rows") {
  CHECK(matmul_tile_fits(TexelMatmul::outer, 0, {6, 3, 8}));
  CHECK_FALSE(matmul_tile_fits(TexelMatmul::outer, 1, {6, 3, 8}));
  CHECK_FALSE(matmul_tile_fits(TexelMatmul::outer, 4, {6, 3, 8}));
  CHECK(matmul_tile_fits(TexelMatmul::outer, 4, {12, 3, 8}));
  CHECK(matmul_tile_fits(TexelMatmul::dot, 0, {6, 3, 8}));
  CHECK_FALSE(matmul_tile_fits(TexelMatmul::dot, 0, {17, 3, 8}));
  CHECK_FALSE(matmul_tile_fits(TexelMatmul::outer, 0, {16, 17, 8}));
  CHECK_FALSE(matmul_tile_fits(TexelMatmul::outer, 0, {0, 1, 8}));
  CHECK_FALSE(matmul_tile_fits(TexelMatmul::outer, 0, {1, 1, 0}));
  // Every candidate runs in every mode of its kernel, so a measurement always has all of them.
  for (TexelMatmul k : {TexelMatmul::outer, TexelMatmul::dot}) {
    REQUIRE(matmul_tile_candidates(k).size() >= 2);
    for (const MatmulTile& t : matmul_tile_candidates(k))
      for (uint32_t mode = 0; mode < 5; ++mode) CHECK(matmul_tile_fits(k, mode, t));
  }
}

TEST_CASE("the default tiling follows the SIMD width, and measured classes override it") {
  const MatmulTiling lanes8 = default_matmul_tiling(8);
  CHECK(lanes8.outer == MatmulTile{16, 2, 8});
  CHECK(lanes8.dot == MatmulTile{16, 8, 32});
  CHECK(default_matmul_tiling(0).outer == lanes8.outer);  // unknown width: 8 lanes
  CHECK(default_matmul_tiling(4).outer.wx == 4);
  CHECK(default_matmul_tiling(32).dot.wx == 128);

  MatmulTiling t = lanes8;
  const MatmulClass c = matmul_class(TexelMatmul::outer, 1, 768, 3072, 256);
  t.chosen[c] = {8, 4, 8};
  CHECK(t.tile(c) == MatmulTile{8, 4, 8});
  CHECK(t.tile(matmul_class(TexelMatmul::outer, 0, 768, 3072, 256)) == lanes8.outer);
  CHECK(t.tile(matmul_class(TexelMatmul::dot, 0, 768, 3072, 256)) == lanes8.dot);

  PhysicalDeviceSnapshot cpu;
  cpu.kind = DeviceKind::cpu;
  cpu.api_version = (1u << 22) | (3u << 12);
  cpu.compute_queue = true;
  cpu.subgroup_size = 8;
  CHECK(plan_device(cpu).quirks.matmul_tiling.outer == lanes8.outer);
  CHECK(plan_device(cpu).quirks.matmul_tiling.chosen.empty());
}
