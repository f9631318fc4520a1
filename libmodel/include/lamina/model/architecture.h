// What distinguishes one model architecture from another, as data: the one
// forward pass reads these flags instead of having a copy per architecture.
#pragma once

#include <string_view>

#include "lamina/model/export.h"

namespace lamina::model {

enum class NormKind { Rms, Layer };            // LayerNorm subtracts the mean and may add a bias
enum class RopeKind { None, Norm, Neox };      // Norm rotates (x[2i], x[2i+1]); Neox (x[i], x[i+d/2])
enum class FfnKind { GatedSilu, GatedGelu, Gelu, MoeGatedSilu };
enum class Layout { Separate, Fused };         // Q/K/V (or gate/up) as one stacked tensor or several
// The layers attention.sliding_window applies to. Pattern: all but the last
// of each attention.sliding_window_pattern layers (gemma3).
enum class WindowLayers { None, All, Even, Pattern };
// The experts' gated activation: silu(gate) * up, or gpt-oss's clamped
// form min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
enum class ExpertActivation { Silu, SwigluOai };

struct LAMINA_MODEL_API ArchSpec {
  std::string_view name;  // general.architecture
  NormKind norm = NormKind::Rms;
  RopeKind rope = RopeKind::Norm;
  FfnKind ffn = FfnKind::GatedSilu;
  Layout qkv = Layout::Separate;
  Layout gate_up = Layout::Separate;
  bool qk_norm = false;              // per-head RMSNorm of Q and K before RoPE (qwen3)
  bool post_norms = false;           // norms after attention and FFN outputs (gemma2)
  bool learned_positions = false;    // position_embd added to the token embedding (gpt2)
  bool scale_embeddings = false;     // embeddings times sqrt(n_embd) (gemma2)
  bool always_tied_output = false;   // ignores output.weight, uses token_embd (gemma2)
  // A file that sets expert_count > 0 swaps the dense FFN for a mixture of
  // experts (Mixtral is stored as llama with expert tensors).
  bool experts_optional = false;
  // Which layers attend to a window when the file sets attention.sliding_window:
  // every layer (Mistral, stored as llama), the even ones (gemma2), a
  // period's local layers (gemma3), or none (architectures whose window
  // llama.cpp ignores).
  WindowLayers sliding_window_layers = WindowLayers::None;
  // A learned logit per head (attn_sinks.weight) joins every softmax
  // denominator without adding a value (gpt-oss).
  bool attention_sinks = false;
  ExpertActivation expert_activation = ExpertActivation::Silu;
  // The tensor name of the norm before the FFN: gpt-oss stores it as
  // post_attention_norm.
  std::string_view ffn_norm_name = "ffn_norm";
  // Multi-head latent attention with shared experts and leading dense
  // layers (deepseek2); the router's gating and weights follow the file.
  bool latent_attention = false;
};

// The spec of a supported architecture, or nullptr.
LAMINA_MODEL_API const ArchSpec* find_arch(std::string_view name);
// Comma-separated names of every supported architecture (for error messages).
LAMINA_MODEL_API std::string_view supported_archs();

}  // namespace lamina::model
