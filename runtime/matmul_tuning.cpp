#include "runtime/matmul_tuning.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/kernels/elementwise.h"
#include "runtime/matmul_tile_file.h"
#include "runtime/vulkan/buffer.h"

namespace remat {

namespace {

// The probe: large enough that every candidate has tens of workgroups per core (128 x 512 is 64
// of the largest tiles), small enough that a run takes a few milliseconds on lavapipe, so a
// class costs well under a second once its pipelines are built. Extents above 512 are one size
// class (runtime/vulkan/matmul_tiles.h) and share this probe.
constexpr uint32_t kProbeExtent = 512;
constexpr int kTimedRuns = 5;
constexpr double kMustBeatPreferred = 0.95;

// The fastest run: load from other processes only ever adds time.
double fastest(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

// The preferred tile first, then the other candidates its kernel can run in this fetch mode.
std::vector<MatmulTile> tiles_to_try(const MatmulClass& c, const MatmulTile& preferred) {
  std::vector<MatmulTile> out;
  if (matmul_tile_fits(c.kernel, c.x_mode, preferred)) out.push_back(preferred);
  for (const MatmulTile& t : matmul_tile_candidates(c.kernel))
    if (matmul_tile_fits(c.kernel, c.x_mode, t) &&
        std::find(out.begin(), out.end(), t) == out.end())
      out.push_back(t);
  return out;
}

uint32_t floats32(uint64_t n) {
  if (n > UINT32_MAX) throw std::logic_error("matmul tile probe larger than 2^32 floats");
  return static_cast<uint32_t>(n);
}

}  // namespace

bool matmul_tuning_enabled_by_env() {
  const char* v = std::getenv("REMAT_MATMUL_TUNING");
  const std::string s = v ? v : "";
  if (s.empty() || s == "on" || s == "1") return true;
  if (s == "off" || s == "0") return false;
  throw std::invalid_argument("REMAT_MATMUL_TUNING must be on or off, got '" + s + "'");
}

MatmulTile measure_matmul_tile(KernelCache& kernels, const kernels::TexelMatmulUse& use,
                               const MatmulTile& preferred, uint32_t shared_x_lanes) {
  const std::vector<MatmulTile> tiles = tiles_to_try(use.cls, preferred);
  if (tiles.empty()) throw std::logic_error("no matmul tile fits " + matmul_class_key(use.cls));
  const kernels::MatmulProbe p =
      kernels::matmul_probe(use.cls, std::min(use.I, kProbeExtent), std::min(use.J, kProbeExtent),
                            std::min(use.R, kProbeExtent));
  Device& device = kernels.device();
  Buffer x(device, p.x_floats * 4, MemoryCategory::scratch, "matmul tile probe x");
  Buffer y(device, p.y_floats * 4, MemoryCategory::scratch, "matmul tile probe y");
  Buffer c(device, p.c_floats * 4, MemoryCategory::scratch, "matmul tile probe c");
  // Ones, not whatever the memory held: denormals or NaNs would time the FPU's slow paths.
  std::vector<Dispatch> ds = {kernels::fill(x.whole(), floats32(p.x_floats), 1.0f),
                              kernels::fill(y.whole(), floats32(p.y_floats), 1.0f)};
  const std::size_t first = ds.size();
  for (const MatmulTile& t : tiles)
    ds.push_back(
        kernels::matmul_probe_dispatch(p, t, shared_x_lanes, x.whole(), y.whole(), c.whole()));
  ExecutorOptions timed;
  timed.timestamps = true;
  Executor ex(kernels, std::move(ds), timed);
  ex.run();  // builds the pipelines (the driver may compile at the first dispatch)
  // Every run times all candidates back to back, so load from other processes hits them alike.
  std::vector<std::vector<double>> ms(tiles.size());
  for (int run = 0; run < kTimedRuns; ++run) {
    ex.run();
    const std::vector<double> all = ex.dispatch_ms();
    for (std::size_t i = 0; i < tiles.size(); ++i) ms[i].push_back(all.at(first + i));
  }
  std::size_t best = 0;
  double best_ms = fastest(ms[0]) * kMustBeatPreferred;
  for (std::size_t i = 1; i < tiles.size(); ++i) {
    const double m = fastest(ms[i]);
    if (m < best_ms) best = i, best_ms = m;
  }
  return tiles[best];
}

MatmulTuningReport tune_matmul_tiles(KernelCache& kernels, std::span<const Dispatch> dispatches,
                                     const std::optional<std::filesystem::path>& file,
                                     MatmulTiling& tiling) {
  // The first use of each class, in schedule order, is what its probe is cut from.
  std::vector<kernels::TexelMatmulUse> uses;
  std::set<MatmulClass> seen;
  for (const Dispatch& d : dispatches)
    if (auto u = kernels::texel_matmul_use(d); u && seen.insert(u->cls).second) uses.push_back(*u);
  MatmulTuningReport r;
  r.classes = uses.size();
  if (uses.empty() || !kernels.device().info().timestamps) return r;

  const MatmulTileFileKey key = matmul_tile_file_key(kernels.device());
  MatmulTileTable table = file ? load_matmul_tiles(*file, key) : MatmulTileTable{};
  const auto start = std::chrono::steady_clock::now();
  for (const kernels::TexelMatmulUse& u : uses) {
    if (tiling.chosen.count(u.cls)) continue;
    if (auto it = table.find(u.cls); it != table.end()) {
      tiling.chosen[u.cls] = it->second;
      ++r.from_file;
      continue;
    }
    const MatmulTile t = measure_matmul_tile(kernels, u, tiling.tile(u.cls), tiling.shared_x_lanes);
    tiling.chosen[u.cls] = table[u.cls] = t;
    ++r.measured;
  }
  r.measure_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (r.measured > 0 && file) save_matmul_tiles(*file, key, table);
  return r;
}

}  // namespace remat
