// The block-weight matmul dispatches: checks, tiles, and W's binding pieces.
#include "runtime/kernels/matmul_blocks.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gguf_block_ids.h"
#include "matmul_blocks_params.h"
#include "runtime/kernels/dequantize_blocks.h"

namespace remat::kernels {

namespace {

// Workgroups along one grid axis: Vulkan's minimum maxComputeWorkGroupCount. Groups of rows of
// the activations beyond it continue along z (the shaders' gl_WorkGroupID.z).
constexpr uint32_t kMaxGroups = 65535;

// A workgroup covers `rows` rows of the activation, the same for all its invocations; each
// invocation covers `cols` W rows (forward, WX apart) or runs of 16 k (input gradient,
// consecutive). CPU drivers: 16 rows x 8 columns in one SIMD register of invocations, the size
// of the texel matmuls' default tiles (matmul_tiles.cpp), fastest of those timed on llvmpipe
// (16 x 4, 8 x 16, 16 x 16; 32 invocations); GPUs: the storage-buffer matmuls' tiles.
// `groups` (input gradient): groups of four n per loop iteration. CPU drivers store every
// value a loop carries through its execution mask once per iteration, so two groups (eight
// fmas into each accumulator per store) run the input gradient 5 to 13% faster on llvmpipe;
// 24 or 32 rows, and four groups, were no faster (more code per iteration than its caches
// hold). GPUs keep registers: one group.
struct Tile {
  uint32_t rows, cols, wx, groups = 1;
};
Tile forward_tile(const DeviceQuirks& q) {
  return q.barriers_are_expensive ? Tile{16, 8, 8} : Tile{4, 2, 64};
}
Tile backward_tile(const DeviceQuirks& q) {
  return q.barriers_are_expensive ? Tile{16, 1, 8, 2} : Tile{4, 1, 64, 1};
}

// The X_LANES constant (shaders/shared_x.glsl): lanes sharing the activation's fetches where the
// device runs subgroups of that size with shuffles and they divide the tile; 1 for none.
uint32_t x_lanes(const DeviceQuirks& q, const Tile& t) {
  const uint32_t lanes = q.matmul_tiling.shared_x_lanes;
  if (lanes < 2 || t.rows % lanes != 0 || t.wx % lanes != 0) return 1;
  return lanes;
}

constexpr uint32_t kContinue = 2;  // MatmulBlocksParams.accumulate: the sum starts from dinp

// W's bytes per block of the input gradient's reduction on CPU drivers: one core's L2, as
// matmul_reduction_blocks.cpp measured for the f32 head.
constexpr uint64_t kBlockCacheBytes = uint64_t{1} << 20;

uint64_t words_up(uint64_t bytes) {
  return (bytes + 3) / 4 * 4;
}
uint64_t texels_up(uint64_t bytes) {
  return (bytes + 15) / 16 * 16;
}

std::string who(const char* what, uint32_t ggml_type) {
  return std::string(what) + " (ggml type " + std::to_string(ggml_type) + ")";
}

void check(const char* what, const MatmulShape& s, uint32_t ggml_type, BufferSlice w) {
  const uint64_t row = block_row_bytes(ggml_type, s.K);  // checks the type and K
  const std::string name = who(what, ggml_type);
  if (s.layout != WeightLayout::out_in)
    throw std::invalid_argument(name + ": a block weight is [N,K] (out, in), one GGUF row per n");
  if (s.x_dtype != DType::f32 || s.y_dtype != DType::f32 || s.w_dtype != DType::f32)
    throw std::invalid_argument(name +
                                ": activations are f32, and the weight's storage is the ggml "
                                "type (MatmulShape.w_dtype stays f32)");
  if (s.M == 0 || s.N == 0 || s.K == 0)
    throw std::invalid_argument(name + ": an empty matmul (M, N, K > 0)");
  const uint64_t need = words_up(uint64_t(s.N) * row);
  if (w.size < need)
    throw std::invalid_argument(
        name + ": " + std::to_string(s.N) + " rows take " + std::to_string(need) +
        " bytes in whole words, the weight's slice holds " + std::to_string(w.size));
}

// Whether the texel kernels run: on CPU drivers, where W's slice reaches a whole 16-byte texel
// past its last byte (else the storage kernels, the same bits).
bool texel_path(const DeviceQuirks& quirks, const MatmulShape& s, uint32_t ggml_type,
                BufferSlice w) {
  return quirks.texel_fetch_beats_storage_loads &&
         w.size >= texels_up(uint64_t(s.N) * block_row_bytes(ggml_type, s.K));
}

// W's binding: its rows' words, or an RGBA32UI view of its rows' whole texels.
Binding w_binding(BufferSlice w, const MatmulShape& s, uint32_t ggml_type, bool texels) {
  const uint64_t bytes = uint64_t(s.N) * block_row_bytes(ggml_type, s.K);
  w.size = texels ? texels_up(bytes) : words_up(bytes);
  Binding b{w, false};
  if (texels) b.texel_format = VK_FORMAT_R32G32B32A32_UINT;
  return b;
}

// The grid: `x` groups along x, `row_groups` along y, continuing along z past kMaxGroups.
std::array<uint32_t, 3> grid(const char* what, uint32_t x, uint32_t row_groups) {
  if (x > kMaxGroups)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(x) +
                                " workgroups along x, above " + std::to_string(kMaxGroups));
  const uint32_t y = std::min(row_groups, kMaxGroups);
  return {x, y, div_up(row_groups, y)};
}

Dispatch forward(const DeviceQuirks& quirks, const MatmulShape& s, uint32_t ggml_type,
                 BufferSlice inp, BufferSlice w, BufferSlice bias, BufferSlice out) {
  check("matmul_blocks_forward", s, ggml_type, w);
  const uint64_t inp_bytes = uint64_t(s.M) * s.K * sizeof(float);
  if (inp.size < inp_bytes)
    throw std::invalid_argument(who("matmul_blocks_forward", ggml_type) +
                                ": inp holds fewer than M * K floats");
  inp.size = inp_bytes;  // whole RGBA32F texels: K is a multiple of 32
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  const bool texels = texel_path(quirks, s, ggml_type, w);
  const Tile t = forward_tile(quirks);
  Dispatch d;
  d.kernel = texels ? KernelId::matmul_blocks_forward_texels : KernelId::matmul_blocks_forward;
  d.spec = {t.wx, 1, 1, ggml_type, t.rows, t.cols, x_lanes(quirks, t)};
  d.bindings = {
      {inp, false}, w_binding(w, s, ggml_type, texels), {has_bias ? bias : w, false}, {out, true}};
  d.push =
      push_bytes(push::MatmulBlocksParams{s.M, s.N, s.K, uint32_t(block_row_bytes(ggml_type, s.K)),
                                          s.row_stride(), s.n_offset, has_bias ? 1u : 0u, 0});
  d.groups = grid("matmul_blocks_forward", div_up(s.N, t.wx * t.cols), div_up(s.M, t.rows));
  d.label = "matmul_blocks_forward";
  return d;
}

Dispatch backward_input(const DeviceQuirks& quirks, const MatmulShape& s, uint32_t ggml_type,
                        BufferSlice dout, BufferSlice w, BufferSlice dinp, uint32_t accumulate) {
  check("matmul_blocks_backward_input", s, ggml_type, w);
  const bool texels = texel_path(quirks, s, ggml_type, w);
  const Tile t = backward_tile(quirks);
  // dout four n per RGBA32F texel where its rows, offset and binding keep texels aligned.
  const bool vec4 = texels && s.row_stride() % 4 == 0 && s.n_offset % 4 == 0 &&
                    dout.size % (4 * sizeof(float)) == 0;
  Dispatch d;
  d.kernel = texels ? KernelId::matmul_blocks_backward_input_texels
                    : KernelId::matmul_blocks_backward_input;
  d.spec = {t.wx, 1, 1, ggml_type, t.rows, t.cols, x_lanes(quirks, t), vec4 ? 1u : 0u, t.groups};
  Binding dout_binding{dout, false};
  if (texels && !vec4) dout_binding = float_input(dout);
  d.bindings = {dout_binding, w_binding(w, s, ggml_type, texels), {dinp, true}};
  d.push =
      push_bytes(push::MatmulBlocksParams{s.M, s.N, s.K, uint32_t(block_row_bytes(ggml_type, s.K)),
                                          s.row_stride(), s.n_offset, 0, accumulate});
  d.groups =
      grid("matmul_blocks_backward_input", div_up(s.K / 16, t.wx * t.cols), div_up(s.M, t.rows));
  d.label = "matmul_blocks_backward_input";
  return d;
}

// An input-gradient dispatch as consecutive dispatches over blocks of about kBlockCacheBytes of
// W's rows, as split_long_reduction (matmul_reduction_blocks.h) splits the f32 kernel's, and
// where it does: on CPU drivers, over two or more row bands, for a reduction longer than two
// blocks, and not for accumulate 1 (old + sum cannot be continued). Block b > 0 continues the
// chains block b - 1 stored (accumulate 2), so each output is the unsplit chain: the same bits.
// Every band then reads a block of W while it is in the cache, instead of all of W in turn.
std::vector<Dispatch> split_reduction(const DeviceQuirks& quirks, const Dispatch& d,
                                      uint64_t row_bytes) {
  push::MatmulBlocksParams p{};
  std::memcpy(&p, d.push.data(), sizeof p);
  const uint64_t rows = std::max<uint64_t>(4, kBlockCacheBytes / row_bytes / 4 * 4);
  if (!quirks.texel_fetch_beats_storage_loads || p.accumulate == 1 ||
      uint64_t(d.groups[1]) * d.groups[2] < 2 || p.N <= 2 * rows)
    return {d};
  const auto block = static_cast<uint32_t>(rows);
  std::vector<Dispatch> out;
  for (uint32_t n0 = 0; n0 < p.N; n0 += block) {
    push::MatmulBlocksParams q = p;
    q.n_begin = n0;
    q.N = std::min(p.N, n0 + block);
    if (n0 > 0) q.accumulate = kContinue;
    Dispatch b = d;
    b.push = push_bytes(q);
    out.push_back(std::move(b));
  }
  return out;
}

// The bytes of piece p's rows, to the end of the 16-byte texel holding their last byte where
// `whole` reaches it, else of the word (a piece that is not the last ends 256-byte aligned; the
// last one ends where the whole weight's words do).
BufferSlice piece_words(BufferSlice whole, const Piece& p, uint64_t row_bytes) {
  BufferSlice slice = piece_of(whole, p, row_bytes);
  const uint64_t room = whole.offset + whole.size - slice.offset;
  slice.size = texels_up(slice.size) <= room ? texels_up(slice.size) : words_up(slice.size);
  return slice;
}

}  // namespace

bool matmul_blocks_reads(uint32_t ggml_type) {
  switch (ggml_type) {
    case REMAT_GGUF_Q8_0:
    case REMAT_GGUF_Q4_0:
    case REMAT_GGUF_Q4_1:
    case REMAT_GGUF_Q5_0:
    case REMAT_GGUF_Q5_1:
    case REMAT_GGUF_Q2_K:
    case REMAT_GGUF_Q3_K:
    case REMAT_GGUF_Q4_K:
    case REMAT_GGUF_Q5_K:
    case REMAT_GGUF_Q6_K:
      return true;
    default:
      return false;
  }
}

uint64_t block_row_bytes(uint32_t ggml_type, uint32_t K) {
  if (!matmul_blocks_reads(ggml_type))
    throw std::invalid_argument(who("matmul_blocks", ggml_type) +
                                ": not a quantized block type the block matmuls read");
  const GpuBlockLayout layout = *gpu_block_layout(ggml_type);
  if (K % layout.values != 0)
    throw std::invalid_argument(who("matmul_blocks", ggml_type) + ": K = " + std::to_string(K) +
                                " is not a whole number of blocks of " +
                                std::to_string(layout.values) + " values");
  return uint64_t(K) / layout.values * layout.bytes;
}

Dispatch matmul_blocks_forward(const DeviceQuirks& quirks, const MatmulShape& s, uint32_t ggml_type,
                               BufferSlice inp, BufferSlice w_blocks, BufferSlice bias,
                               BufferSlice out) {
  return forward(quirks, s, ggml_type, inp, w_blocks, bias, out);
}

Dispatch matmul_blocks_backward_input(const DeviceQuirks& quirks, const MatmulShape& s,
                                      uint32_t ggml_type, BufferSlice dout, BufferSlice w_blocks,
                                      BufferSlice dinp, GradWrite mode) {
  return backward_input(quirks, s, ggml_type, dout, w_blocks, dinp, static_cast<uint32_t>(mode));
}

std::vector<Piece> block_weight_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                       uint32_t ggml_type) {
  // Whole words a piece: a limit of whole words keeps a piece's rounded-up binding within it.
  DeviceQuirks q = quirks;
  q.max_binding_bytes = quirks.max_binding_bytes / 4 * 4;
  return binding_pieces(q, s.N, block_row_bytes(ggml_type, s.K), "matmul_blocks");
}

std::vector<Dispatch> matmul_blocks_forward_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                                   uint32_t ggml_type, BufferSlice inp,
                                                   BufferSlice w_blocks, BufferSlice bias,
                                                   BufferSlice out) {
  const auto pieces = block_weight_pieces(quirks, s, ggml_type);
  if (pieces.size() == 1) return {forward(quirks, s, ggml_type, inp, w_blocks, bias, out)};
  check("matmul_blocks_forward", s, ggml_type, w_blocks);  // the whole weight's words
  const uint64_t row = block_row_bytes(ggml_type, s.K);
  std::vector<Dispatch> ds;
  for (const Piece& p : pieces)
    ds.push_back(forward(quirks, piece_shape(s, p), ggml_type, inp, piece_words(w_blocks, p, row),
                         bias, out));
  return ds;
}

std::vector<Dispatch> matmul_blocks_backward_input_pieces(const DeviceQuirks& quirks,
                                                          const MatmulShape& s, uint32_t ggml_type,
                                                          BufferSlice dout, BufferSlice w_blocks,
                                                          BufferSlice dinp, GradWrite mode) {
  const auto pieces = block_weight_pieces(quirks, s, ggml_type);
  const auto first = static_cast<uint32_t>(mode);
  const uint64_t row = block_row_bytes(ggml_type, s.K);
  if (pieces.size() == 1)
    return split_reduction(quirks,
                           backward_input(quirks, s, ggml_type, dout, w_blocks, dinp, first), row);
  check("matmul_blocks_backward_input", s, ggml_type, w_blocks);
  std::vector<Dispatch> ds;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (Dispatch& d : split_reduction(quirks,
                                       backward_input(quirks, piece_shape(s, pieces[i]), ggml_type,
                                                      dout, piece_words(w_blocks, pieces[i], row),
                                                      dinp, i == 0 ? first : kContinue),
                                       row))
      ds.push_back(std::move(d));
  return ds;
}

}  // namespace remat::kernels
