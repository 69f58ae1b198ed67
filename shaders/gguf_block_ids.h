// The ggml type ids (enum ggml_type, as GGUF files store them; formats/gguf_types.h GgmlType) of
// the block formats the GPU decoders read (gguf_blocks.glsl), shared by GLSL and C++ like
// push_constants.h. A kernel takes the type as a specialization constant holding one of these.
#ifndef REMAT_GGUF_BLOCK_IDS_H
#define REMAT_GGUF_BLOCK_IDS_H

#define REMAT_GGUF_F32 0u
#define REMAT_GGUF_F16 1u
#define REMAT_GGUF_Q4_0 2u
#define REMAT_GGUF_Q4_1 3u
#define REMAT_GGUF_Q5_0 6u
#define REMAT_GGUF_Q5_1 7u
#define REMAT_GGUF_Q8_0 8u
#define REMAT_GGUF_Q2_K 10u
#define REMAT_GGUF_Q3_K 11u
#define REMAT_GGUF_Q4_K 12u
#define REMAT_GGUF_Q5_K 13u
#define REMAT_GGUF_Q6_K 14u
#define REMAT_GGUF_BF16 30u

#endif  // REMAT_GGUF_BLOCK_IDS_H
