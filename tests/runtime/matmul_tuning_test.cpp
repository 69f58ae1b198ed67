// Choosing matmul tiles by measurement: what is measured, what is remembered, how it is turned
// off, and that a session with measured (or any file's) tiles trains to the same bits as one
// with the device's default tiles. Nothing here asserts which tile is fastest.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "runtime/kernels/matmul_texels.h"
#include "runtime/matmul_tile_file.h"
#include "runtime/matmul_tuning.h"
#include "runtime/session.h"
#include "tests/runtime/tiny_training.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Sets REMAT_MATMUL_TUNING for one scope (the test environment turns it off).
class TuningEnv {
 public:
  explicit TuningEnv(const char* value) {
    if (const char* v = std::getenv(kName)) old_ = v;
    if (value)
      ::setenv(kName, value, 1);
    else
      ::unsetenv(kName);
  }
  ~TuningEnv() {
    if (old_)
      ::setenv(kName, old_->c_str(), 1);
    else
      ::unsetenv(kName);
  }

 private:
  static constexpr const char* kName = "REMAT_MATMUL_TUNING";
  std::optional<std::string> old_;
};

DeviceQuirks texel_quirks() {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = true;
  return q;
}

// A forward (outer kernel, X_MODE 0) and an input gradient (dot kernel) of one small layer.
std::vector<Dispatch> two_classes() {
  const kernels::MatmulShape s{64, 128, 96, kernels::WeightLayout::in_out};
  const DeviceQuirks q = texel_quirks();
  return {*kernels::matmul_forward_texels(q, s, {}, {}, {}, {}),
          *kernels::matmul_backward_input_texels(q, s, {}, {}, {}, 0)};
}

bool is_candidate(const MatmulClass& c, const MatmulTile& t) {
  for (const MatmulTile& k : matmul_tile_candidates(c.kernel))
    if (k == t) return true;
  return false;
}

}  // namespace

TEST_CASE("REMAT_MATMUL_TUNING turns measuring on and off, and nothing else") {
  for (const char* on : {static_cast<const char*>(nullptr), "", "on", "1"}) {
    TuningEnv env(on);
    CHECK(matmul_tuning_enabled_by_env());
  }
  for (const char* off : {"off", "0"}) {
    TuningEnv env(off);
    CHECK_FALSE(matmul_tuning_enabled_by_env());
  }
  TuningEnv env("maybe");
  CHECK_THROWS_WITH(matmul_tuning_enabled_by_env(),
                    "REMAT_MATMUL_TUNING must be on or off, got 'maybe'");
}

TEST_CASE("each shape class is measured once, then read from the tile file") {
  if (!test::device().info().timestamps) {
    WARN("the device has no timestamps: nothing is measured");
    return;
  }
  test::TempFolder dir("matmul_tuning");
  const auto file = matmul_tile_file(dir.path(), matmul_tile_file_key(test::device()));
  const std::vector<Dispatch> ds = two_classes();

  MatmulTiling first = texel_quirks().matmul_tiling;
  const MatmulTuningReport measured = tune_matmul_tiles(test::kernels(), ds, file, first);
  CHECK(measured.classes == 2);
  CHECK(measured.measured == 2);
  CHECK(measured.from_file == 0);
  REQUIRE(first.chosen.size() == 2);
  for (const auto& [c, t] : first.chosen) CHECK(is_candidate(c, t));
  CHECK(load_matmul_tiles(file, matmul_tile_file_key(test::device())) == first.chosen);

  MatmulTiling second = texel_quirks().matmul_tiling;
  const MatmulTuningReport loaded = tune_matmul_tiles(test::kernels(), ds, file, second);
  CHECK(loaded.measured == 0);
  CHECK(loaded.from_file == 2);
  CHECK(second.chosen == first.chosen);

  // Without a file: measured, kept nowhere. A class the tiling already has is left alone.
  MatmulTiling third = texel_quirks().matmul_tiling;
  const MatmulClass fwd = kernels::texel_matmul_use(ds[0])->cls;
  third.chosen[fwd] = {4, 1, 8};
  const MatmulTuningReport once = tune_matmul_tiles(test::kernels(), ds, std::nullopt, third);
  CHECK(once.measured == 1);
  CHECK(third.chosen.at(fwd) == MatmulTile{4, 1, 8});
  // No texel matmul, nothing to do.
  MatmulTiling none = texel_quirks().matmul_tiling;
  CHECK(tune_matmul_tiles(test::kernels(), {}, file, none).classes == 0);
}

TEST_CASE("a session trains to the same bits with the tiles of a tile file as without") {
  SessionConfig plain = test::tiny_config();
  plain.shape.batch = 2;
  plain.shape.seq = 16;
  plain.pipeline_cache_dir = std::nullopt;
  plain.measure_matmul_tiles = false;
  Session a(test::device(), plain);
  CHECK(a.matmul_tuning().classes == 0);
  const float a0 = test::tiny_step(a, 0), a1 = test::tiny_step(a, 1);

  // Tiles other than the defaults for every class the step uses, as if measured before.
  std::set<MatmulClass> classes;
  for (const Dispatch& d : lower_plan_stand_ins(a.plan(), test::device().plan().quirks))
    if (auto u = kernels::texel_matmul_use(d)) classes.insert(u->cls);
  if (!test::device().plan().quirks.texel_fetch_beats_storage_loads) {
    CHECK(classes.empty());  // GPUs run the storage-buffer kernels: no tiles to choose
    return;
  }
  REQUIRE(classes.size() >= 3);
  test::TempFolder dir("matmul_tuning_session");
  MatmulTileTable table;
  for (const MatmulClass& c : classes)
    table[c] = c.kernel == TexelMatmul::outer ? MatmulTile{8, 2, 16} : MatmulTile{16, 4, 32};
  const MatmulTileFileKey key = matmul_tile_file_key(test::device());
  REQUIRE(save_matmul_tiles(matmul_tile_file(dir.path(), key), key, table));

  TuningEnv env("on");
  SessionConfig tuned = plain;
  tuned.pipeline_cache_dir = dir.path();
  tuned.measure_matmul_tiles = true;
  Session b(test::device(), tuned);
  if (test::device().info().timestamps) {
    CHECK(b.matmul_tuning().classes == classes.size());
    CHECK(b.matmul_tuning().from_file == classes.size());
    CHECK(b.matmul_tuning().measured == 0);
    CHECK(b.matmul_tiling().chosen == table);
  }
  const float b0 = test::tiny_step(b, 0), b1 = test::tiny_step(b, 1);
  CHECK(std::memcmp(&a0, &b0, sizeof a0) == 0);
  CHECK(std::memcmp(&a1, &b1, sizeof a1) == 0);
  CHECK(test::parameter_bytes(a) == test::parameter_bytes(b));
  CHECK(test::same_bits(a.values(a.plan().parameters.at(0)), b.values(b.plan().parameters.at(0))));
}
