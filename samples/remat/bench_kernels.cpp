// `remat bench --kernels`: every kernel of a step timed against the device's measured peak FMA
// rate and copy bandwidth, and the matmul tiles the session chose.
#include "bench_kernels.h"
#include "device_args.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "bench_report.h"
#include "runtime/kernels/roofline.h"
#include "runtime/session.h"
#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/executor.h"
#include "runtime/vulkan/kernel_cache.h"

namespace remat::cli {
namespace {

struct Peak {
  double gflops = 0;  // peak_fma
  double gbps = 0;    // peak_copy
  double fma_ms = 0, copy_ms = 0;
};

double median_dispatch_ms(KernelCache& kc, Dispatch d, int repeats) {
  ExecutorOptions opt;
  opt.timestamps = true;
  Executor ex(kc, {std::move(d)}, opt);
  ex.run();  // warm-up: pipeline creation, first touch of the memory
  std::vector<double> v;
  for (int i = 0; i < repeats; ++i) {
    ex.run();
    v.push_back(ex.dispatch_ms().at(0));
  }
  return median(v);
}

Peak measure_peak(Device& device, int repeats) {
  KernelCache kc(device);
  Peak p;
  // FMA: enough invocations to fill a large GPU; lengthen the chains until a run takes >= 30 ms.
  const uint32_t count = 1u << 20;
  Buffer out(device, uint64_t(count) * 4, MemoryCategory::scratch, "peak_fma out");
  uint32_t iterations = 8;
  for (;;) {
    const double ms =
        median_dispatch_ms(kc, kernels::peak_fma(count, iterations, 1.0f, 1.0f, out.whole()), 1);
    if (ms >= 30 || iterations >= 4096) break;
    const double grow = ms > 0 ? std::ceil(40 / ms) : 64;
    iterations =
        std::min<uint32_t>(4096, iterations * static_cast<uint32_t>(std::clamp(grow, 2.0, 64.0)));
  }
  p.fma_ms = median_dispatch_ms(kc, kernels::peak_fma(count, iterations, 1.0f, 1.0f, out.whole()),
                                repeats);
  p.gflops = kernels::peak_fma_flops(count, iterations) / (p.fma_ms * 1e6);
  // Copy: 64 MiB each way (within a 128 MiB storage-buffer binding), well past any cache.
  const uint32_t vec4s =
      std::min<uint64_t>(64ull << 20, device.info().max_storage_buffer_range) / 16;
  Buffer src(device, uint64_t(vec4s) * 16, MemoryCategory::scratch, "peak_copy src");
  Buffer dst(device, uint64_t(vec4s) * 16, MemoryCategory::scratch, "peak_copy dst");
  p.copy_ms = median_dispatch_ms(kc, kernels::peak_copy(vec4s, src.whole(), dst.whole()), repeats);
  p.gbps = kernels::peak_copy_bytes(vec4s) / (p.copy_ms * 1e6);
  return p;
}

struct KernelRow {
  std::string name;  // the step's label, or its kind for a family
  OpKind kind{};
  std::string phase;
  double ms = 0, flops = 0, bytes = 0;
  int count = 0;
};

// Where the texel matmuls' tiles came from, and each shape class's tile.
void print_matmul_tiles(const Session& s) {
  const MatmulTuningReport& r = s.matmul_tuning();
  const MatmulTiling& t = s.matmul_tiling();
  if (r.classes == 0) {
    std::printf("tiles    matmul: device defaults, outer %ux%u/%u, dot %ux%u/%u (%s)\n",
                t.outer.rows, t.outer.cols, t.outer.wx, t.dot.rows, t.dot.cols, t.dot.wx,
                s.config().measure_matmul_tiles && matmul_tuning_enabled_by_env()
                    ? "nothing to measure"
                    : "REMAT_MATMUL_TUNING=off");
    return;
  }
  std::printf(
      "tiles    matmul: %zu shape classes, %zu from the tile file, %zu measured in %.0f ms\n",
      r.classes, r.from_file, r.measured, r.measure_ms);
  for (const auto& [c, tile] : t.chosen)
    std::printf("         %-20s rows %2u, cols %2u%s, workgroup %u\n", matmul_class_key(c).c_str(),
                tile.rows, tile.cols, c.kernel == TexelMatmul::outer ? " vec4" : "     ", tile.wx);
}

}  // namespace

int run_bench_kernels(const BenchOptions& o) {
  auto device = open_device(o.sel.device_profile);
  std::printf("device   %s\n", device->summary().c_str());
  std::fflush(stdout);
  const Peak peak = measure_peak(*device, o.repeats);
  std::printf(
      "peak     FMA %.1f GFLOP/s (peak_fma, %.2f ms), copy %.1f GB/s (peak_copy, %.2f ms); "
      "ridge %.1f FLOP/byte\n",
      peak.gflops, peak.fma_ms, peak.gbps, peak.copy_ms, peak.gflops / peak.gbps);
  const ModelConfig& m = o.sel.model;
  std::printf(
      "model    %s: L%d C%d H%d V%d; batch %d x seq %d; policy none; %d warm-up + %d "
      "measured steps, median per kernel\n",
      o.sel.model_name.c_str(), m.layers, m.dim, m.heads, m.vocab, o.sel.shape.batch,
      o.sel.shape.seq, o.warmup, o.steps);
  std::fflush(stdout);
  SessionConfig cfg;
  cfg.model = m;
  cfg.shape = o.sel.shape;
  cfg.choose_loss_chunk = o.sel.choose_loss_chunk;
  cfg.lora = o.lora;
  cfg.timestamps = true;
  Session session(*device, cfg);
  print_matmul_tiles(session);
  const Measurement meas = measure_session(session, o.warmup, o.steps);

  // The fused optimizer's dispatch carries the first AdamW step's index but updates every
  // parameter: its row gets the FLOPs and bytes of all AdamW steps.
  double adamw_flops = 0, adamw_bytes = 0;
  int adamw_steps = 0, adamw_rows = 0;
  for (const Step& st : session.plan().steps)
    if (st.kind == OpKind::adamw) adamw_flops += st.flops, adamw_bytes += st.bytes, ++adamw_steps;
  for (const StepTime& s : meas.steps) adamw_rows += s.kind == OpKind::adamw;
  const bool fused_adamw = adamw_rows == 1 && adamw_steps > 1;

  std::vector<KernelRow> rows;
  std::map<OpKind, KernelRow> families;
  for (const StepTime& s : meas.steps) {
    KernelRow r{s.label,       s.kind,      phase_name(s.step->phase), s.ms, s.step->flops,
                s.step->bytes, s.dispatches};
    if (fused_adamw && s.kind == OpKind::adamw) r.flops = adamw_flops, r.bytes = adamw_bytes;
    rows.push_back(r);
    KernelRow& f = families[s.kind];
    f.name = std::string(op_kind_name(s.kind));
    f.kind = s.kind;
    f.ms += r.ms, f.flops += r.flops, f.bytes += r.bytes, ++f.count;
  }
  auto line = [&](const KernelRow& r) {
    const double gfs = r.flops / (r.ms * 1e6), gbs = r.bytes / (r.ms * 1e6);
    const double ai = r.bytes > 0 ? r.flops / r.bytes : INFINITY;
    // A kernel with no FLOPs (pure data movement) is bound by bandwidth alone.
    const double roof = r.flops > 0 ? std::min(peak.gflops, ai * peak.gbps) : 0;
    std::printf("%-34.34s %4d %9.3f %9.3f %8.2f %8.2f %6.1f%% %6.1f%% %6.1f%%\n", r.name.c_str(),
                r.count, r.ms, r.flops / 1e9, gfs, gbs, 100 * gfs / peak.gflops,
                100 * gbs / peak.gbps, roof > 0 ? 100 * gfs / roof : 100 * gbs / peak.gbps);
  };
  std::printf("\n%-34s %4s %9s %9s %8s %8s %7s %7s %7s\n", "kernel (step)", "n", "ms", "GFLOP",
              "GFLOP/s", "GB/s", "%FMA", "%copy", "%roof");
  for (const KernelRow& r : rows) line(r);
  std::printf("\nper family (sum over the step)\n");
  std::vector<KernelRow> fam;
  for (const auto& [k, f] : families) fam.push_back(f);
  std::sort(fam.begin(), fam.end(),
            [](const KernelRow& a, const KernelRow& b) { return a.ms > b.ms; });
  for (const KernelRow& r : fam) line(r);
  std::printf("\nper shader (sum over the step; fastest: each dispatch's fastest step, summed)\n");
  std::printf("%-34s %4s %9s %9s\n", "shader", "n", "ms", "fastest");
  double fastest_total = 0;
  for (const KernelTime& k : meas.kernels) {
    std::printf("%-34.34s %4d %9.3f %9.3f\n", k.kernel.c_str(), k.dispatches, k.ms, k.fastest_ms);
    fastest_total += k.fastest_ms;
  }
  std::printf("%-34s %4zu %9s %9.3f\n", "all", session.dispatch_count(), "", fastest_total);
  std::printf("\nstep     %.1f ms wall, %.1f ms in timed dispatches, host %.1f ms (%.1f%%)\n",
              meas.median_wall_ms, meas.median_gpu_ms, meas.median_host_ms,
              100 * meas.median_host_ms / meas.median_wall_ms);
  std::printf("recorded %zu dispatches, %zu barriers between them\n", session.dispatch_count(),
              session.barrier_count());
  std::printf(
      "%%FMA, %%copy: rate / measured peak; %%roof: GFLOP/s / min(peak FMA, FLOP/byte x peak "
      "copy)\n");

  std::string s =
      "kind,step,phase,dispatches,ms,flops,bytes,gflop_per_s,gb_per_s,peak_gflop_per_s,peak_gb_per_"
      "s\n";
  for (const KernelRow& r : rows)
    s += std::string(op_kind_name(r.kind)) + "," + csv_cell(r.name) + "," + csv_cell(r.phase) +
         "," + std::to_string(r.count) + "," + fmt("%.6f", r.ms) + "," + json_number(r.flops) +
         "," + json_number(r.bytes) + "," + fmt("%.4f", r.flops / (r.ms * 1e6)) + "," +
         fmt("%.4f", r.bytes / (r.ms * 1e6)) + "," + fmt("%.4f", peak.gflops) + "," +
         fmt("%.4f", peak.gbps) + "\n";
  std::filesystem::create_directories(o.out);
  write_file_atomically(o.out / "kernels.csv", s);
  std::printf("wrote    %s\n", (o.out / "kernels.csv").string().c_str());
  return 0;
}

}  // namespace remat::cli
