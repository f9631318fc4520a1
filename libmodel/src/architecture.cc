#include "lamina/model/architecture.h"

#include <array>

namespace lamina::model {
namespace {

constexpr std::array<ArchSpec, 10> kArchs = [] {
  ArchSpec llama{.name = "llama", .experts_optional = true, .sliding_window_layers = WindowLayers::All};

  ArchSpec qwen2{.name = "qwen2", .rope = RopeKind::Neox};

  ArchSpec qwen3{.name = "qwen3", .rope = RopeKind::Neox, .qk_norm = true};

  ArchSpec qwen3moe = qwen3;
  qwen3moe.name = "qwen3moe";
  qwen3moe.ffn = FfnKind::MoeGatedSilu;

  ArchSpec phi3{.name = "phi3", .rope = RopeKind::Neox, .qkv = Layout::Fused,
                .gate_up = Layout::Fused};

  ArchSpec gpt2{.name = "gpt2", .norm = NormKind::Layer, .rope = RopeKind::None,
                .ffn = FfnKind::Gelu, .qkv = Layout::Fused, .learned_positions = true};

  ArchSpec gemma2{.name = "gemma2", .rope = RopeKind::Neox, .ffn = FfnKind::GatedGelu,
                  .post_norms = true, .scale_embeddings = true, .always_tied_output = true,
                  .sliding_window_layers = WindowLayers::Even};

  ArchSpec gemma3 = gemma2;
  gemma3.name = "gemma3";
  gemma3.qk_norm = true;
  gemma3.sliding_window_layers = WindowLayers::Pattern;

  ArchSpec gpt_oss{.name = "gpt-oss", .rope = RopeKind::Neox, .ffn = FfnKind::MoeGatedSilu,
                   .sliding_window_layers = WindowLayers::Even, .attention_sinks = true,
                   .expert_activation = ExpertActivation::SwigluOai, .ffn_norm_name = "post_attention_norm"};
  ArchSpec deepseek2{.name = "deepseek2", .ffn = FfnKind::MoeGatedSilu, .latent_attention = true};

  return std::array<ArchSpec, 10>{llama, qwen2, qwen3, qwen3moe, phi3, gpt2, gemma2, gemma3, gpt_oss, deepseek2};
}();

}  // namespace

const ArchSpec* find_arch(std::string_view name) {
  for (const auto& a : kArchs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string_view supported_archs() {
  return "llama, qwen2, qwen3, qwen3moe, phi3, gpt2, gemma2, gemma3, gpt-oss, deepseek2";
}

}  // namespace lamina::model
