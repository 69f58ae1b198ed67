// Register tiles never change a result bit: every candidate tile (and tiles no candidate list
// has, odd sizes included) gives the storage-buffer kernels' bits for every matmul direction,
// weight layout and X fetch mode, on shapes that leave partial tiles. And the probes that time
// tiles compute what they claim to.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_texels.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::WeightLayout;

namespace {

DeviceQuirks quirks(bool texels, const MatmulTiling& tiling) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = true;
  q.texel_fetch_beats_storage_loads = texels;
  q.matmul_tiling = tiling;
  return q;
}

// The device's lanes for shared X fetches (0 where it has no shuffles to offer).
uint32_t device_lanes() {
  return test::device().plan().quirks.matmul_tiling.shared_x_lanes;
}

// Tilings to check: each kernel's candidates side by side with X shared across the device's
// lanes, as sessions run them, then the default without sharing, then tiles of odd sizes no
// candidate list has (a tile a fetch mode cannot run falls back to the default, checked by the
// first; rows that are no multiple of the lanes fetch X per invocation). Each tile is a
// pipeline per kernel and mode, compiled at its first dispatch: few on purpose.
std::vector<MatmulTiling> tilings() {
  const auto outer = matmul_tile_candidates(TexelMatmul::outer);
  const auto dot = matmul_tile_candidates(TexelMatmul::dot);
  std::vector<MatmulTiling> out;
  for (std::size_t i = 0; i < std::max(outer.size(), dot.size()); ++i)
    out.push_back({outer[std::min(i, outer.size() - 1)],
                   dot[std::min(i, dot.size() - 1)],
                   {},
                   device_lanes()});
  out.push_back({outer[0], dot[0], {}, 0});
  out.push_back({{12, 3, 8}, {5, 7, 16}, {}, device_lanes()});
  return out;
}

enum class Kind { forward, input, weight };

// C after the dispatch `kind` builds under `q`, from fixed random operands (C starts random too,
// so accumulate 1 adds to something).
std::vector<float> run(Kind kind, const kernels::MatmulShape& s, const DeviceQuirks& q,
                       uint32_t accumulate) {
  const std::size_t in = size_t(s.M) * s.K, w = size_t(s.N) * s.K, out = size_t(s.M) * s.N;
  const std::size_t a_n = kind == Kind::forward ? in : out;
  const std::size_t b_n = kind == Kind::weight ? in : w;
  const std::size_t c_n = kind == Kind::forward ? out : kind == Kind::input ? in : w;
  Buffer a = test::upload_buffer(test::random_floats(a_n, 1), "a");
  Buffer b = test::upload_buffer(test::random_floats(b_n, 2), "b");
  const std::vector<float> c0 = test::random_floats(c_n, 3);
  Buffer c = test::upload_buffer(c0, "c");
  Buffer bias = test::upload_buffer(test::random_floats(s.N, 4), "bias");
  const auto mode = static_cast<kernels::GradWrite>(accumulate);
  test::run_once(
      {kind == Kind::forward
           ? kernels::matmul_forward(q, s, a.whole(), b.whole(), bias.whole(), c.whole())
       : kind == Kind::input
           ? kernels::matmul_backward_input(q, s, a.whole(), b.whole(), c.whole(), mode)
           : kernels::matmul_backward_weight(q, s, a.whole(), b.whole(), c.whole(), mode)});
  return test::read<float>(c, c_n);
}

}  // namespace

TEST_CASE("every matmul tile gives the storage kernels' bits") {
  struct Case {
    uint32_t M, N, K;
  };
  // 69 and 101 leave partial tiles; N = 101 reads dout as shifted texels (68 rows: whole texels,
  // X_MODE 3 and 4) or one float at a time (69 rows, X_MODE 2); K = 50 makes the forward of an
  // (in, out) weight read inp one float at a time.
  const Case cases[] = {{69, 144, 48}, {68, 101, 48}, {69, 101, 48}, {37, 36, 50}, {12, 8, 4}};
  for (const Case& c : cases)
    for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in})
      for (Kind kind : {Kind::forward, Kind::input, Kind::weight}) {
        const kernels::MatmulShape s{c.M, c.N, c.K, layout};
        const uint32_t acc = kind == Kind::forward ? 0 : (c.M + c.N) % 2;
        const std::vector<float> want = run(kind, s, quirks(false, {}), acc);
        for (const MatmulTiling& t : tilings()) {
          INFO(c.M << "x" << c.N << "x" << c.K << " layout " << int(layout) << " kind " << int(kind)
                   << " outer " << t.outer.rows << "," << t.outer.cols << "," << t.outer.wx
                   << " dot " << t.dot.rows << "," << t.dot.cols << "," << t.dot.wx
                   << " shared x lanes " << t.shared_x_lanes);
          CHECK(test::bit_identical(run(kind, s, quirks(true, t), acc), want));
        }
      }
}

TEST_CASE("a measured tile replaces the default for its class only") {
  const kernels::MatmulShape s{256, 3072, 768, WeightLayout::in_out};
  MatmulTiling tiling = default_matmul_tiling(8);
  const MatmulClass fwd = matmul_class(TexelMatmul::outer, 0, 256, 3072, 768);
  tiling.chosen[fwd] = {8, 2, 16};
  const DeviceQuirks q = quirks(true, tiling);
  const auto d = kernels::matmul_forward_texels(q, s, {}, {}, {}, {});
  REQUIRE(d);
  CHECK(d->spec == std::vector<uint32_t>{16, 1, 1, 8, 2, 0, 1});
  CHECK(d->groups == std::array<uint32_t, 3>{div_up(768, 32), 32, 1});
  const auto use = kernels::texel_matmul_use(*d);
  REQUIRE(use);
  CHECK(use->cls == fwd);
  CHECK((use->I == 256 && use->J == 3072 && use->R == 768));
  // dinp of the same layer is another class (the dot kernel): the default.
  const auto in = kernels::matmul_backward_input_texels(q, s, {}, {}, {}, 0);
  REQUIRE(in);
  CHECK(in->spec == std::vector<uint32_t>{32, 1, 1, 16, 8, 1});
  // A tile the fetch mode cannot run falls back to the default (X_MODE 1 needs rows % 4 == 0).
  tiling.chosen[matmul_class(TexelMatmul::outer, 1, 768, 3072, 256)] = {6, 2, 8};
  const auto dw = kernels::matmul_backward_weight_texels(quirks(true, tiling), s, {}, {}, {}, 0);
  REQUIRE(dw);
  CHECK(dw->spec == std::vector<uint32_t>{8, 1, 1, 16, 2, 1, 1});
  // Shared X fetches: where the lanes divide the tile's rows and workgroup, in every fetch mode
  // but one float at a time (2), the shifted ones (3 and 4: the tied head's dlogits) included.
  tiling.shared_x_lanes = 8;
  const DeviceQuirks shared = quirks(true, tiling);
  CHECK(kernels::matmul_forward_texels(shared, s, {}, {}, {}, {})->spec.back() == 8);
  CHECK(kernels::matmul_backward_input_texels(shared, s, {}, {}, {}, 0)->spec.back() == 8);
  CHECK(kernels::matmul_backward_weight_texels(shared, s, {}, {}, {}, 0)->spec.back() == 8);
  tiling.chosen[fwd] = {12, 2, 8};
  CHECK(kernels::matmul_forward_texels(quirks(true, tiling), s, {}, {}, {}, {})->spec.back() == 1);
  const kernels::MatmulShape head{256, 50257, 768, WeightLayout::out_in};
  const auto head_dw = kernels::matmul_backward_weight_texels(shared, head, {}, {}, {}, 0);
  REQUIRE(head_dw);
  CHECK(head_dw->spec.at(5) == 4);
  CHECK(head_dw->spec.back() == 8);
  CHECK_FALSE(
      kernels::texel_matmul_use(kernels::matmul_forward(quirks(false, {}), s, {}, {}, {}, {})));
}

TEST_CASE("tile probes run their class's kernel and fetch mode and sum R ones") {
  for (TexelMatmul k : {TexelMatmul::outer, TexelMatmul::dot})
    for (uint32_t mode = 0; mode < (k == TexelMatmul::outer ? 5u : 1u); ++mode) {
      INFO("kernel " << int(k) << " mode " << mode);
      {
        const MatmulClass cls = matmul_class(k, mode, 30, 40, 20);
        const kernels::MatmulProbe p = kernels::matmul_probe(cls, 30, 40, 20);
        CHECK(p.x_floats == uint64_t(p.I) * p.R);
        CHECK(p.J % 4 == 0);
        Buffer x = test::upload_buffer(std::vector<float>(p.x_floats, 1.0f), "x");
        Buffer y = test::upload_buffer(std::vector<float>(p.y_floats, 1.0f), "y");
        Buffer c = test::garbage_buffer<float>(p.c_floats, "c");
        for (const MatmulTile& t : matmul_tile_candidates(k)) {
          const Dispatch d =
              kernels::matmul_probe_dispatch(p, t, device_lanes(), x.whole(), y.whole(), c.whole());
          CHECK(d.spec.at(3) == t.rows);
          if (k == TexelMatmul::outer) CHECK(d.spec.at(5) == mode);
          test::run_once({d});
          CHECK(test::read<float>(c, p.c_floats) == std::vector<float>(p.c_floats, float(p.R)));
        }
      }
    }
}
