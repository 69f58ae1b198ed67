// W's words for gguf_blocks.glsl through an RGBA32UI texel view named Wgt (the block matmuls on
// CPU drivers): GGUF_WORD(i) picks word i of its texel, GGUF_BYTES16(o) assembles bytes
// o..o+15 from the two texels that hold them, so a run's 16 code bytes cost two texel fetches
// instead of four or eight word fetches (llvmpipe's cost of a fetch hardly depends on the
// texel's size). Included by matmul_blocks_*_body.glsl before gguf_blocks.glsl.
#ifndef REMAT_MATMUL_BLOCKS_WORDS_GLSL
#define REMAT_MATMUL_BLOCKS_WORDS_GLSL
#extension GL_EXT_samplerless_texture_functions : require  // textureSize(Wgt)

#define GGUF_WORD(i) texelFetch(Wgt, int((i) >> 2))[(i) & 3u]

// Bytes o..o+15 as four little-endian words: words o/4.. of texels o/16 and o/16 + 1 (clamped
// to the view: bytes past the weight's end are never used), shifted by o % 4 bytes.
uvec4 matmul_blocks_bytes16(uint o) {
  const int t = int(o >> 4);
  const uvec4 lo = texelFetch(Wgt, t);
  const uvec4 hi = texelFetch(Wgt, min(t + 1, textureSize(Wgt) - 1));
  const uint ws = (o >> 2) & 3u;
  const uvec4 a = ws == 0u   ? lo
                  : ws == 1u ? uvec4(lo.yzw, hi.x)
                  : ws == 2u ? uvec4(lo.zw, hi.xy)
                             : uvec4(lo.w, hi.xyz);
  const uint after = ws == 0u ? hi.x : ws == 1u ? hi.y : ws == 2u ? hi.z : hi.w;
  const uint bs = (o & 3u) * 8u;
  return bs == 0u ? a : a >> bs | uvec4(a.yzw, after) << (32u - bs);
}
#define GGUF_BYTES16(o) matmul_blocks_bytes16(o)
// Bytes o..o+15 where o % 16 == 0: one texel.
#define GGUF_TEXEL16(o) texelFetch(Wgt, int((o) >> 4))

#endif  // REMAT_MATMUL_BLOCKS_WORDS_GLSL
