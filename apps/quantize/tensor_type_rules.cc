// The rules follow llama.cpp's src/llama-quant.cpp (llama_tensor_get_type and
// its helpers) for the file types of quant_mix.h; the low-bit IQ1/IQ2/IQ3 and
// ternary branches are left out because those mixes are not offered.
#include "tensor_type_rules.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <string_view>

#include "lamina/gguf/file.h"

namespace lamina::quantize {
namespace {

using gguf::TensorType;
using F = FileType;

enum class Category {
  TokenEmbd,
  AttentionQ,
  AttentionK,
  AttentionV,    // attn_v, and the fused attn_qkv / attn_kv_b that carry V
  AttentionOutput,
  FfnUp,
  FfnGate,
  FfnDown,
  Output,
  Other,
};

bool contains(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight")
    return Category::TokenEmbd;
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") ||
      contains(name, "attn_v.weight"))
    return Category::AttentionV;
  if (contains(name, "attn_k.weight")) return Category::AttentionK;
  if (contains(name, "attn_q.weight")) return Category::AttentionQ;
  if (contains(name, "attn_output.weight")) return Category::AttentionOutput;
  if (contains(name, "ffn_up")) return Category::FfnUp;
  if (contains(name, "ffn_gate")) return Category::FfnGate;
  if (contains(name, "ffn_down")) return Category::FfnDown;
  return Category::Other;
}

// Name parts of 2-D weights that stay as they are: small or sensitive tensors
// (routers, positional tables, convolutions, RWKV mixing vectors, vision and
// audio parts) that llama-quantize never quantizes.
constexpr std::string_view kNeverQuantized[] = {
    "_norm.weight",          "ffn_gate_inp.weight",    "ffn_gate_tid2eid.weight",
    "altup",                 "laurel",                 "per_layer_model_proj",
    "ssm_conv1d",            "shortconv.conv.weight",  "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight",  "time_mix_w0.weight",
    "time_mix_w1.weight",    "time_mix_w2.weight",     "time_mix_v0.weight",
    "time_mix_v1.weight",    "time_mix_v2.weight",     "time_mix_a0.weight",
    "time_mix_a1.weight",    "time_mix_a2.weight",     "time_mix_g1.weight",
    "time_mix_g2.weight",    "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",
    "sam.pos_embd",          "sam.neck.",              "sam.net_",
    ".rel_pos",              ".patch_embd",            ".patch_merger",
    "a.rvq.codebook",        "mm.a.code_embd",
};

// ggml's dimension count: trailing dimensions of size 1 do not count.
int effective_dims(const std::vector<uint64_t>& shape) {
  int dims = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] > 1) dims = static_cast<int>(i) + 1;
  }
  return dims;
}

bool may_quantize(const TensorSpec& t) {
  if (effective_dims(t.shape) < 2) return false;
  const std::string_view name = t.name;
  if (!name.ends_with("weight")) return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  const auto found = [&](std::string_view part) { return contains(name, part); };
  return std::none_of(std::begin(kNeverQuantized), std::end(kNeverQuantized), found);
}

// The block number of "blk.N....", or -1.
int layer_of(std::string_view name) {
  constexpr std::string_view prefix = "blk.";
  if (!name.starts_with(prefix)) return -1;
  int layer = 0;
  std::size_t i = prefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    layer = layer * 10 + (name[i] - '0');
  }
  return layer;
}

uint64_t block_size(TensorType type) { return gguf::tensor_type_traits(type)->block_size; }
std::string type_name(TensorType type) { return std::string(gguf::tensor_type_name(type)); }

// Layers that get more bits in the _M mixes: the first and last eighth, and
// every third layer in between.
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

class RuleState {
 public:
  RuleState(const ModelShape& model, std::span<const TensorSpec> tensors,
            const TypeRuleOptions& options)
      : model_(model), options_(options), ftype_(options.mix->file_type) {
    for (const TensorSpec& t : tensors) {
      const Category c = category_of(t.name);
      if (c == Category::AttentionV) ++n_attention_v_;
      if (c == Category::Output) tied_embeddings_ = false;
    }
    n_gqa_ = model.n_head_kv == 0 ? 0 : static_cast<int>(model.n_head / model.n_head_kv);
  }

  TypeChoice choose(const TensorSpec& t) {
    if (!may_quantize(t)) return {t.type, std::nullopt};
    const Category category = category_of(t.name);
    if (options_.token_embd_type && category == Category::TokenEmbd)
      return {explicit_type(t, *options_.token_embd_type), std::nullopt};
    if (options_.output_type && category == Category::Output)
      return {explicit_type(t, *options_.output_type), std::nullopt};

    TensorType type = options_.mix->default_type;
    if (!is_block_quantized(type)) return {type, std::nullopt};
    // MXFP4_MOE: every expert stack MXFP4, every other matrix Q8_0, with no
    // further rule (as llama-quantize writes gpt-oss).
    if (is(F::MXFP4_MOE)) return fit_row_length(t, t.shape.size() > 2 && t.shape[2] > 1 ? TensorType::MXFP4 : type);
    if (!options_.pure) type = mix_rule(t, category, type);
    return fit_row_length(t, type);
  }

 private:
  bool falcon() const { return model_.arch == "falcon"; }
  bool is(F f) const { return ftype_ == f; }
  // llama.cpp's LLM_TYPE_70B: 80 llama layers with grouped-query attention.
  bool llama_70b() const {
    return model_.arch == "llama" && model_.n_layer == 80 && model_.n_head != model_.n_head_kv;
  }

  TensorType explicit_type(const TensorSpec& t, TensorType type) const {
    if (t.shape[0] % block_size(type) != 0)
      throw QuantizeError("tensor '" + t.name + "': row length " + std::to_string(t.shape[0]) +
                          " is not a multiple of " + std::to_string(block_size(type)) +
                          ", which " + type_name(type) + " needs");
    return type;
  }

  // The ffn_* counters count layers in file order; mixture-of-experts files
  // name the layer instead, since expert tensors need not come in order.
  std::pair<int, int> ffn_layer(int counter, const std::string& name) const {
    const int n_layer = static_cast<int>(model_.n_layer);
    if (model_.n_expert <= 1) return {counter, n_layer};
    const int layer = layer_of(name);
    if (layer < 0) throw QuantizeError("tensor '" + name + "': cannot read its layer number");
    if (layer >= n_layer)
      throw QuantizeError("tensor '" + name + "': layer " + std::to_string(layer) +
                          " is not below block_count " + std::to_string(n_layer));
    return {layer, n_layer};
  }

  TensorType mix_rule(const TensorSpec& t, Category category, TensorType type) {
    const bool tied_embedding = tied_embeddings_ && category == Category::TokenEmbd;
    switch (category == Category::Output || tied_embedding ? Category::Output : category) {
      case Category::Output:
        if (options_.output_type) return *options_.output_type;
        if (falcon() || t.shape[0] % block_size(type) != 0) return TensorType::Q8_0;
        return type == TensorType::Q8_0 ? type : TensorType::Q6_K;
      case Category::AttentionV:
        return attention_v_rule(type);
      case Category::AttentionK:
        return model_.n_expert == 8 ? TensorType::Q8_0 : type;
      case Category::FfnDown:
        return ffn_down_rule(t, type);
      case Category::AttentionOutput:
        return attention_output_rule(type);
      default:
        return type;
    }
  }

  TensorType attention_v_rule(TensorType type) {
    const int i = i_attention_v_++;
    if (is(F::Q2_K)) {
      type = n_gqa_ >= 4 ? TensorType::Q4_K : TensorType::Q3_K;
    } else if (is(F::Q3_K_M)) {
      type = i < 2 ? TensorType::Q5_K : TensorType::Q4_K;
    } else if (is(F::Q3_K_L)) {
      type = TensorType::Q5_K;
    } else if ((is(F::IQ4_NL) || is(F::IQ4_XS)) && n_gqa_ >= 4) {
      type = TensorType::Q5_K;
    } else if ((is(F::Q4_K_M) || is(F::Q5_K_M)) && use_more_bits(i, n_attention_v_)) {
      type = TensorType::Q6_K;
    } else if (is(F::Q4_K_S) && i < 4) {
      type = TensorType::Q5_K;
    }
    // In a 70B model 8 heads share each V projection, so it is small enough
    // to afford more bits.
    if (llama_70b() && (type == TensorType::Q3_K || type == TensorType::Q4_K))
      type = TensorType::Q5_K;
    if (model_.n_expert == 8) type = TensorType::Q8_0;
    return type;
  }

  TensorType ffn_down_rule(const TensorSpec& t, TensorType type) {
    const auto [layer, n_layer] = ffn_layer(i_ffn_down_++, t.name);
    const bool more_bits = use_more_bits(layer, n_layer);
    if (is(F::Q2_K)) return TensorType::Q3_K;
    if (is(F::Q3_K_M)) {
      if (layer < n_layer / 16) return TensorType::Q5_K;
      return !falcon() || more_bits ? TensorType::Q4_K : TensorType::Q3_K;
    }
    if (is(F::Q3_K_L)) return falcon() ? TensorType::Q4_K : TensorType::Q5_K;
    if (is(F::Q4_K_M)) {
      if (falcon()) {
        if (layer < n_layer / 16) return TensorType::Q6_K;
        return more_bits ? TensorType::Q5_K : TensorType::Q4_K;
      }
      return more_bits ? TensorType::Q6_K : type;
    }
    if (layer < n_layer / 8 && (is(F::IQ4_NL) || is(F::IQ4_XS))) return TensorType::Q5_K;
    if (is(F::Q5_K_M) && more_bits) return TensorType::Q6_K;
    if (is(F::Q4_K_S) && !falcon() && layer < n_layer / 8) return TensorType::Q5_K;
    return type;
  }

  TensorType attention_output_rule(TensorType type) const {
    if (falcon()) return is(F::Q3_K_L) ? TensorType::Q4_K : type;
    if (model_.n_expert == 8) {
      const bool raised = is(F::Q2_K) || is(F::Q3_K_S) || is(F::Q3_K_M) || is(F::IQ4_NL) ||
                          is(F::Q4_K_S) || is(F::Q4_K_M) || is(F::IQ4_XS);
      return raised ? TensorType::Q5_K : type;
    }
    if (is(F::Q2_K)) return TensorType::Q3_K;
    if (is(F::Q3_K_M)) return TensorType::Q4_K;
    if (is(F::Q3_K_L)) return TensorType::Q5_K;
    return type;
  }

  // A row must hold whole blocks: a 256-block type falls back to the 32-block
  // type of similar quality, and when even that does not fit, to F16.
  // (llama.cpp stops with an error where no fallback is listed; F16 keeps
  // such a tensor exact instead.)
  static TypeChoice fit_row_length(const TensorSpec& t, TensorType wanted) {
    const uint64_t row = t.shape[0];
    if (row % block_size(wanted) == 0) return {wanted, std::nullopt};
    TensorType fallback = TensorType::F16;
    switch (wanted) {
      case TensorType::IQ4_XS: fallback = TensorType::IQ4_NL; break;
      case TensorType::Q2_K:
      case TensorType::Q3_K: fallback = TensorType::Q4_0; break;
      case TensorType::Q4_K: fallback = TensorType::Q5_0; break;
      case TensorType::Q5_K: fallback = TensorType::Q5_1; break;
      case TensorType::Q6_K: fallback = TensorType::Q8_0; break;
      default: break;
    }
    if (row % block_size(fallback) != 0) fallback = TensorType::F16;
    return {fallback, wanted};
  }

  const ModelShape& model_;
  const TypeRuleOptions& options_;
  FileType ftype_;
  bool tied_embeddings_ = true;  // until an output.weight shows up
  int n_gqa_ = 0;
  int n_attention_v_ = 0;
  int i_attention_v_ = 0;
  int i_ffn_down_ = 0;
};

uint32_t first_u32(const gguf::GgufFile& file, const std::string& key, uint32_t absent) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) return absent;
  if (v->type() == gguf::ValueType::Array) {
    const gguf::Array& a = v->as_array();
    if (a.empty()) return absent;
    return static_cast<uint32_t>(a.at(0).as_uint64());
  }
  return static_cast<uint32_t>(v->as_uint64());
}

}  // namespace

ModelShape model_shape_from(const gguf::GgufFile& file) {
  ModelShape shape;
  shape.arch = file.architecture();
  const std::string p = shape.arch + ".";
  shape.n_layer = first_u32(file, p + "block_count", 0);
  shape.n_head = first_u32(file, p + "attention.head_count", 0);
  shape.n_head_kv = first_u32(file, p + "attention.head_count_kv", shape.n_head);
  shape.n_expert = first_u32(file, p + "expert_count", 0);
  return shape;
}

std::vector<TypeChoice> choose_tensor_types(const ModelShape& model,
                                            std::span<const TensorSpec> tensors,
                                            const TypeRuleOptions& options) {
  if (options.mix == nullptr) throw QuantizeError("no quantization mix given");
  std::vector<std::string> names;
  names.reserve(tensors.size());
  for (const TensorSpec& t : tensors) names.push_back(t.name);

  RuleState state(model, tensors, options);
  std::vector<TypeChoice> choices(tensors.size(), TypeChoice{TensorType::F32, std::nullopt});
  // The layer counters advance in llama-quantize's order, whatever order the
  // tensors come in.
  for (std::size_t i : llama_quantize_order(names)) choices[i] = state.choose(tensors[i]);
  return choices;
}

std::vector<std::size_t> llama_quantize_order(std::span<const std::string> names) {
  std::vector<std::size_t> order(names.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const int la = layer_of(names[a]);
    const int lb = layer_of(names[b]);
    if (la != lb) return la < lb;
    return names[a] < names[b];
  });
  return order;
}

}  // namespace lamina::quantize
