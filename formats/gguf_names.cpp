#include "formats/gguf_names.h"

#include <array>
#include <charconv>
#include <stdexcept>
#include <utility>

#include "formats/gguf_qwen35.h"

namespace remat {
namespace {

using Pair = std::pair<std::string_view, std::string_view>;  // {Hugging Face, GGUF}

// Per-block names, without the "model.layers.N." / "h.N." and "blk.N." prefixes.
constexpr std::array kLlamaBlock = {
    Pair{"input_layernorm.weight", "attn_norm.weight"},
    Pair{"self_attn.q_proj.weight", "attn_q.weight"},
    Pair{"self_attn.q_proj.bias", "attn_q.bias"},
    Pair{"self_attn.k_proj.weight", "attn_k.weight"},
    Pair{"self_attn.k_proj.bias", "attn_k.bias"},
    Pair{"self_attn.v_proj.weight", "attn_v.weight"},
    Pair{"self_attn.v_proj.bias", "attn_v.bias"},
    Pair{"self_attn.q_norm.weight", "attn_q_norm.weight"},
    Pair{"self_attn.k_norm.weight", "attn_k_norm.weight"},
    Pair{"self_attn.o_proj.weight", "attn_output.weight"},
    Pair{"post_attention_layernorm.weight", "ffn_norm.weight"},
    Pair{"mlp.gate_proj.weight", "ffn_gate.weight"},
    Pair{"mlp.up_proj.weight", "ffn_up.weight"},
    Pair{"mlp.down_proj.weight", "ffn_down.weight"},
};
// Gemma 3's four norms per block: the norm after attention is Hugging Face's
// post_attention_layernorm (Llama's name for the norm before the MLP, ffn_norm in GGUF), and the
// norm before the MLP is pre_feedforward_layernorm.
constexpr std::array kGemma3Block = {
    Pair{"input_layernorm.weight", "attn_norm.weight"},
    Pair{"self_attn.q_proj.weight", "attn_q.weight"},
    Pair{"self_attn.k_proj.weight", "attn_k.weight"},
    Pair{"self_attn.v_proj.weight", "attn_v.weight"},
    Pair{"self_attn.q_norm.weight", "attn_q_norm.weight"},
    Pair{"self_attn.k_norm.weight", "attn_k_norm.weight"},
    Pair{"self_attn.o_proj.weight", "attn_output.weight"},
    Pair{"post_attention_layernorm.weight", "post_attention_norm.weight"},
    Pair{"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    Pair{"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    Pair{"mlp.gate_proj.weight", "ffn_gate.weight"},
    Pair{"mlp.up_proj.weight", "ffn_up.weight"},
    Pair{"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr std::array kLlamaTop = {
    Pair{"model.embed_tokens.weight", "token_embd.weight"},
    Pair{"model.norm.weight", "output_norm.weight"},
    Pair{"lm_head.weight", "output.weight"},
};
constexpr std::array kGpt2Block = {
    Pair{"ln_1.weight", "attn_norm.weight"},          Pair{"ln_1.bias", "attn_norm.bias"},
    Pair{"attn.c_attn.weight", "attn_qkv.weight"},    Pair{"attn.c_attn.bias", "attn_qkv.bias"},
    Pair{"attn.c_proj.weight", "attn_output.weight"}, Pair{"attn.c_proj.bias", "attn_output.bias"},
    Pair{"ln_2.weight", "ffn_norm.weight"},           Pair{"ln_2.bias", "ffn_norm.bias"},
    Pair{"mlp.c_fc.weight", "ffn_up.weight"},         Pair{"mlp.c_fc.bias", "ffn_up.bias"},
    Pair{"mlp.c_proj.weight", "ffn_down.weight"},     Pair{"mlp.c_proj.bias", "ffn_down.bias"},
};
constexpr std::array kGpt2Top = {
    Pair{"wte.weight", "token_embd.weight"},
    Pair{"wpe.weight", "position_embd.weight"},
    Pair{"ln_f.weight", "output_norm.weight"},
    Pair{"ln_f.bias", "output_norm.bias"},
};

// Maps `name` through a table of whole names and a table of per-block names, from side `from` of
// the pairs to the other side.
template <class Top, class Block>
std::optional<std::string> map_name(std::string_view name, const Top& top, const Block& block,
                                    std::string_view from_prefix, std::string_view to_prefix,
                                    bool from_hf) {
  for (const Pair& p : top)
    if ((from_hf ? p.first : p.second) == name) return std::string(from_hf ? p.second : p.first);
  const auto parts = split_block(name, from_prefix);
  if (!parts) return std::nullopt;
  for (const Pair& p : block)
    if ((from_hf ? p.first : p.second) == parts->second)
      return std::string(to_prefix) + std::string(parts->first) + "." +
             std::string(from_hf ? p.second : p.first);
  return std::nullopt;
}

}  // namespace

std::optional<GgufArch> gguf_arch(std::string_view name) {
  if (name == "llama") return GgufArch::llama;
  if (name == "qwen2") return GgufArch::qwen2;
  if (name == "qwen3") return GgufArch::qwen3;
  if (name == "gemma3") return GgufArch::gemma3;
  if (name == "gpt2") return GgufArch::gpt2;
  if (name == kQwen35GgufArch) return GgufArch::qwen35;
  return std::nullopt;
}

std::string_view gguf_arch_name(GgufArch a) {
  switch (a) {
    case GgufArch::llama:
      return "llama";
    case GgufArch::qwen2:
      return "qwen2";
    case GgufArch::qwen3:
      return "qwen3";
    case GgufArch::gemma3:
      return "gemma3";
    case GgufArch::gpt2:
      return "gpt2";
    case GgufArch::qwen35:
      return kQwen35GgufArch;
  }
  throw std::logic_error("unknown GGUF architecture");
}

std::optional<std::string> gguf_tensor_name(std::string_view hf_name, GgufArch arch) {
  if (arch == GgufArch::qwen35) return qwen35_gguf_tensor_name(hf_name);
  if (arch == GgufArch::gpt2) return map_name(hf_name, kGpt2Top, kGpt2Block, "h.", "blk.", true);
  if (arch == GgufArch::gemma3)
    return map_name(hf_name, kLlamaTop, kGemma3Block, "model.layers.", "blk.", true);
  return map_name(hf_name, kLlamaTop, kLlamaBlock, "model.layers.", "blk.", true);
}

std::optional<std::string> hf_tensor_name(std::string_view gguf_name, GgufArch arch) {
  if (arch == GgufArch::qwen35) return qwen35_hf_tensor_name(gguf_name);
  if (arch == GgufArch::gpt2) return map_name(gguf_name, kGpt2Top, kGpt2Block, "blk.", "h.", false);
  if (arch == GgufArch::gemma3)
    return map_name(gguf_name, kLlamaTop, kGemma3Block, "blk.", "model.layers.", false);
  return map_name(gguf_name, kLlamaTop, kLlamaBlock, "blk.", "model.layers.", false);
}

GgufLayout gguf_layout(std::string_view hf_name, GgufArch arch, int heads, int kv_heads) {
  GgufLayout l;
  if (arch == GgufArch::gpt2) {
    l.transposed =
        hf_name.ends_with(".weight") &&
        (hf_name.ends_with("attn.c_attn.weight") || hf_name.ends_with("attn.c_proj.weight") ||
         hf_name.ends_with("mlp.c_fc.weight") || hf_name.ends_with("mlp.c_proj.weight"));
    return l;
  }
  if (arch == GgufArch::gemma3 && hf_name.ends_with("norm.weight")) l.norm_shift = 1.0f;
  if (arch == GgufArch::qwen35) {
    // The converter adds 1 to every norm but the gated one (formats/gguf_qwen35.h).
    const bool gated_norm = hf_name.ends_with("linear_attn.norm.weight");
    if (hf_name.ends_with("norm.weight") && !gated_norm) l.norm_shift = 1.0f;
    l.qwen35_transform = hf_name.find(".linear_attn.") != std::string_view::npos && !gated_norm;
  }
  if (arch == GgufArch::llama) {
    if (hf_name.ends_with("self_attn.q_proj.weight") || hf_name.ends_with("self_attn.q_proj.bias"))
      l.rope_heads = heads;
    if (hf_name.ends_with("self_attn.k_proj.weight") || hf_name.ends_with("self_attn.k_proj.bias"))
      l.rope_heads = kv_heads;
  }
  return l;
}

uint64_t gguf_row_of(uint64_t hf_row, uint64_t rows, int heads) {
  if (heads <= 0) return hf_row;
  const uint64_t d = rows / static_cast<uint64_t>(heads);
  if (d * static_cast<uint64_t>(heads) != rows || d % 2 != 0 || hf_row >= rows)
    throw std::invalid_argument("RoPE rows: " + std::to_string(rows) + " rows do not split into " +
                                std::to_string(heads) + " heads of an even size");
  const uint64_t head = hf_row / d, within = hf_row % d, half = d / 2;
  const uint64_t t = within / half, i = within % half;
  return head * d + 2 * i + t;
}

std::optional<std::pair<std::string_view, std::string_view>> split_block(std::string_view name,
                                                                         std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  const std::size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  const std::string_view number = name.substr(0, dot);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  if (number.size() > 1 && number[0] == '0') return std::nullopt;
  return std::pair{number, name.substr(dot + 1)};
}

}  // namespace remat
