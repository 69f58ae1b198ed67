// Where the attention kernels keep each invocation's head-sized rows (q, accumulators, ...), and
// how their head loops run. Included by attention_*_body.glsl after H4, U, R (rows per invocation) and WX; declare a row
// with ROWS_SHARED(name) at file scope and ROW_PRIVATE(name) in the function using it (no
// semicolons after either), read and
// write vec4 d of it as ROW(name, d), and run head loops as
//   HEAD_LOOP for (uint d0 = 0; d0 < HEAD_VEC4S; d0 += U) { [[unroll]] for (u < U) ... }
// A key's (or query's) row that all R rows of an invocation use is read as
//   SHARED_READ(name, READ, base)  ...  READ_AT(name, READ, base, d)   (vec4 d: READ(base + d))
// and BC-key blocks run as KEY_LOOP for (uint j = 0; j < BC; ++j).
// Both layouts do the same arithmetic in the same order: the same bits.
//
// Default (GPUs): workgroup memory, vec4 d of invocation `lane` at [d * WX + lane], touched only by
// its owner (no barriers), and head loops bounded by the push constant D4 (= H4): with a known
// trip count the compiler would unroll them completely, and llvmpipe then spends minutes compiling
// one pipeline over its per-lane shared-memory accesses.
//
// ROWS_IN_REGISTERS (the texel-view kernels, which run on CPU drivers): private arrays indexed only
// by constants, since the head loops run to the specialization constant H4 and are unrolled; the
// rows become registers (or stack spills). On llvmpipe every workgroup-memory access is a loop
// over the SIMD lanes with a branch per lane (like a storage-buffer load), so this takes the
// accumulator updates off the hot path; unrolled texel fetches and FMAs compile in seconds. It
// also leaves the kernels' loops only over keys (queries), far fewer than llvmpipe's 65,535
// iterations per invocation: attention.cpp's budget counts only those for these kernels.
#ifdef ROWS_IN_REGISTERS
#define ROWS_SHARED(name)
#define ROW_PRIVATE(name) vec4 name[R * H4];
#define ROW(name, d) name[d]
#define HEAD_LOOP [[unroll]]
#define HEAD_VEC4S H4
#define KEY_LOOP [[unroll]]
// Read once into registers (the R rows' uses are in separate statements).
#define SHARED_READ(name, READ, base) \
  vec4 name[H4];                      \
  [[unroll]] for (uint d_ = 0; d_ < H4; ++d_) name[d_] = READ((base) + d_);
#define READ_AT(name, READ, base, d) name[d]
#else
#define ROWS_SHARED(name) shared vec4 name[H4 * WX];
#define ROW_PRIVATE(name)
#define ROW(name, d) name[(d) * WX + lane]
#define HEAD_LOOP
#define HEAD_VEC4S min(p.D4, H4)
#define KEY_LOOP
#define SHARED_READ(name, READ, base)
#define READ_AT(name, READ, base, d) READ((base) + (d))
#endif
