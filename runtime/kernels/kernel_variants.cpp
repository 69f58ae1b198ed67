#include "runtime/kernels/kernel_variants.h"

#include <stdexcept>
#include <string>

namespace remat::kernels {

namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;

struct Variant {
  KernelId base;
  OperandTypes types;
  KernelId kernel;
};

// A frozen base stored in 16 bits (TrainShape::weight_dtype): the kernels that read a weight.
// The texel matmuls read f16 through an RGBA16F view, which widens it: no other kernel.
constexpr Variant kVariants[] = {
    {KernelId::matmul_forward, {f32, f16, f32}, KernelId::matmul_forward_wf16},
    {KernelId::matmul_forward, {f32, bf16, f32}, KernelId::matmul_forward_wbf16},
    {KernelId::matmul_forward_vec4, {f32, f16, f32}, KernelId::matmul_forward_vec4_wf16},
    {KernelId::matmul_forward_vec4, {f32, bf16, f32}, KernelId::matmul_forward_vec4_wbf16},
    {KernelId::matmul_backward_input, {f32, f16, f32}, KernelId::matmul_backward_input_wf16},
    {KernelId::matmul_backward_input, {f32, bf16, f32}, KernelId::matmul_backward_input_wbf16},
    {KernelId::matmul_backward_input_vec4,
     {f32, f16, f32},
     KernelId::matmul_backward_input_vec4_wf16},
    {KernelId::matmul_backward_input_vec4,
     {f32, bf16, f32},
     KernelId::matmul_backward_input_vec4_wbf16},
    {KernelId::matmul_outer_texels, {f32, f16, f32}, KernelId::matmul_outer_texels},
    {KernelId::matmul_outer_texels, {f32, bf16, f32}, KernelId::matmul_outer_texels_ybf16},
    {KernelId::matmul_dot_texels, {f32, f16, f32}, KernelId::matmul_dot_texels},
    {KernelId::matmul_dot_texels, {f32, bf16, f32}, KernelId::matmul_dot_texels_ybf16},
    {KernelId::embedding_forward, {f32, f16, f32}, KernelId::embedding_forward_wf16},
    {KernelId::embedding_forward, {f32, bf16, f32}, KernelId::embedding_forward_wbf16},
    // Activations stored in 16 bits (TrainShape::activation_dtype): x read (and the result
    // written) as f16 or bf16; the chunked head's logits (x16 -> f32); dW from a 16-bit x; the
    // embedding's output. The weight-gradient texel kernels read a 16-bit x as Y above.
    {KernelId::matmul_forward, {f16, f32, f16}, KernelId::matmul_forward_actf16},
    {KernelId::matmul_forward, {f16, f32, f32}, KernelId::matmul_forward_xf16},
    {KernelId::matmul_forward_vec4, {f16, f32, f16}, KernelId::matmul_forward_vec4_actf16},
    {KernelId::matmul_forward_vec4, {f16, f32, f32}, KernelId::matmul_forward_vec4_xf16},
    {KernelId::matmul_outer_texels, {f16, f32, f16}, KernelId::matmul_outer_texels_actf16},
    {KernelId::matmul_outer_texels, {f16, f32, f32}, KernelId::matmul_outer_texels_xf16},
    {KernelId::matmul_dot_texels, {f16, f32, f16}, KernelId::matmul_dot_texels_actf16},
    {KernelId::matmul_dot_texels, {f16, f32, f32}, KernelId::matmul_dot_texels_xf16},
    {KernelId::matmul_backward_weight, {f32, f16, f32}, KernelId::matmul_backward_weight_xf16},
    {KernelId::matmul_backward_weight_vec4,
     {f32, f16, f32},
     KernelId::matmul_backward_weight_vec4_xf16},
    {KernelId::embedding_forward, {f32, f32, f16}, KernelId::embedding_forward_actf16},
    {KernelId::matmul_forward, {bf16, f32, bf16}, KernelId::matmul_forward_actbf16},
    {KernelId::matmul_forward, {bf16, f32, f32}, KernelId::matmul_forward_xbf16},
    {KernelId::matmul_forward_vec4, {bf16, f32, bf16}, KernelId::matmul_forward_vec4_actbf16},
    {KernelId::matmul_forward_vec4, {bf16, f32, f32}, KernelId::matmul_forward_vec4_xbf16},
    {KernelId::matmul_outer_texels, {bf16, f32, bf16}, KernelId::matmul_outer_texels_actbf16},
    {KernelId::matmul_outer_texels, {bf16, f32, f32}, KernelId::matmul_outer_texels_xbf16},
    {KernelId::matmul_dot_texels, {bf16, f32, bf16}, KernelId::matmul_dot_texels_actbf16},
    {KernelId::matmul_dot_texels, {bf16, f32, f32}, KernelId::matmul_dot_texels_xbf16},
    {KernelId::matmul_backward_weight, {f32, bf16, f32}, KernelId::matmul_backward_weight_xbf16},
    {KernelId::matmul_backward_weight_vec4,
     {f32, bf16, f32},
     KernelId::matmul_backward_weight_vec4_xbf16},
    {KernelId::embedding_forward, {f32, f32, bf16}, KernelId::embedding_forward_actbf16},
    // Both at once: a 16-bit x (and result) with a frozen 16-bit weight. The texel matmuls read an
    // f16 weight through an RGBA16F view, so those rows name the activation-only kernels.
    {KernelId::matmul_forward, {f16, f16, f16}, KernelId::matmul_forward_actf16_wf16},
    {KernelId::matmul_forward, {f16, f16, f32}, KernelId::matmul_forward_xf16_wf16},
    {KernelId::matmul_forward_vec4, {f16, f16, f16}, KernelId::matmul_forward_vec4_actf16_wf16},
    {KernelId::matmul_forward_vec4, {f16, f16, f32}, KernelId::matmul_forward_vec4_xf16_wf16},
    {KernelId::matmul_outer_texels, {f16, f16, f16}, KernelId::matmul_outer_texels_actf16},
    {KernelId::matmul_outer_texels, {f16, f16, f32}, KernelId::matmul_outer_texels_xf16},
    {KernelId::matmul_dot_texels, {f16, f16, f16}, KernelId::matmul_dot_texels_actf16},
    {KernelId::matmul_dot_texels, {f16, f16, f32}, KernelId::matmul_dot_texels_xf16},
    {KernelId::embedding_forward, {f32, f16, f16}, KernelId::embedding_forward_actf16_wf16},
    {KernelId::matmul_forward, {f16, bf16, f16}, KernelId::matmul_forward_actf16_wbf16},
    {KernelId::matmul_forward, {f16, bf16, f32}, KernelId::matmul_forward_xf16_wbf16},
    {KernelId::matmul_forward_vec4, {f16, bf16, f16}, KernelId::matmul_forward_vec4_actf16_wbf16},
    {KernelId::matmul_forward_vec4, {f16, bf16, f32}, KernelId::matmul_forward_vec4_xf16_wbf16},
    {KernelId::matmul_outer_texels, {f16, bf16, f16}, KernelId::matmul_outer_texels_actf16_ybf16},
    {KernelId::matmul_outer_texels, {f16, bf16, f32}, KernelId::matmul_outer_texels_xf16_ybf16},
    {KernelId::matmul_dot_texels, {f16, bf16, f16}, KernelId::matmul_dot_texels_actf16_ybf16},
    {KernelId::matmul_dot_texels, {f16, bf16, f32}, KernelId::matmul_dot_texels_xf16_ybf16},
    {KernelId::embedding_forward, {f32, bf16, f16}, KernelId::embedding_forward_actf16_wbf16},
    {KernelId::matmul_forward, {bf16, f16, bf16}, KernelId::matmul_forward_actbf16_wf16},
    {KernelId::matmul_forward, {bf16, f16, f32}, KernelId::matmul_forward_xbf16_wf16},
    {KernelId::matmul_forward_vec4, {bf16, f16, bf16}, KernelId::matmul_forward_vec4_actbf16_wf16},
    {KernelId::matmul_forward_vec4, {bf16, f16, f32}, KernelId::matmul_forward_vec4_xbf16_wf16},
    {KernelId::matmul_outer_texels, {bf16, f16, bf16}, KernelId::matmul_outer_texels_actbf16},
    {KernelId::matmul_outer_texels, {bf16, f16, f32}, KernelId::matmul_outer_texels_xbf16},
    {KernelId::matmul_dot_texels, {bf16, f16, bf16}, KernelId::matmul_dot_texels_actbf16},
    {KernelId::matmul_dot_texels, {bf16, f16, f32}, KernelId::matmul_dot_texels_xbf16},
    {KernelId::embedding_forward, {f32, f16, bf16}, KernelId::embedding_forward_actbf16_wf16},
    {KernelId::matmul_forward, {bf16, bf16, bf16}, KernelId::matmul_forward_actbf16_wbf16},
    {KernelId::matmul_forward, {bf16, bf16, f32}, KernelId::matmul_forward_xbf16_wbf16},
    {KernelId::matmul_forward_vec4,
     {bf16, bf16, bf16},
     KernelId::matmul_forward_vec4_actbf16_wbf16},
    {KernelId::matmul_forward_vec4, {bf16, bf16, f32}, KernelId::matmul_forward_vec4_xbf16_wbf16},
    {KernelId::matmul_outer_texels,
     {bf16, bf16, bf16},
     KernelId::matmul_outer_texels_actbf16_ybf16},
    {KernelId::matmul_outer_texels, {bf16, bf16, f32}, KernelId::matmul_outer_texels_xbf16_ybf16},
    {KernelId::matmul_dot_texels, {bf16, bf16, bf16}, KernelId::matmul_dot_texels_actbf16_ybf16},
    {KernelId::matmul_dot_texels, {bf16, bf16, f32}, KernelId::matmul_dot_texels_xbf16_ybf16},
    {KernelId::embedding_forward, {f32, bf16, bf16}, KernelId::embedding_forward_actbf16_wbf16},
};

}  // namespace

KernelId kernel_variant(KernelId base, OperandTypes types) {
  if (types == OperandTypes{}) return base;
  for (const Variant& v : kVariants)
    if (v.base == base && v.types == types) return v.kernel;
  throw std::invalid_argument(std::string(kernel_name(base)) + " has no variant for operands " +
                              std::string(dtype_name(types.a)) + ", " +
                              std::string(dtype_name(types.b)) + " -> " +
                              std::string(dtype_name(types.c)));
}

VkFormat texel_format(DType t, bool vec4) {
  switch (t) {
    case DType::f32:
      return vec4 ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_R32_SFLOAT;
    case DType::f16:
      return vec4 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R16_SFLOAT;
    case DType::bf16:
      return vec4 ? VK_FORMAT_R16G16B16A16_UINT : VK_FORMAT_R16_UINT;
    case DType::u32:
    case DType::blocks:
      break;
  }
  throw std::invalid_argument("no texel view format for " + std::string(dtype_name(t)));
}

}  // namespace remat::kernels
