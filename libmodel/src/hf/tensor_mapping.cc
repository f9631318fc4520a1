#include "hf/tensor_mapping.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string_view>

#include "hf/gpt_oss_experts.h"
#include "lamina/model/config.h"
#include "lamina/quant/half.h"

namespace lamina::model::hf {
namespace {

enum class Change {
  None,
  PermuteHeads,    // rotate-half rows -> adjacent pairs, per head (Llama Q/K)
  Transpose,       // Conv1D [in, out] -> [out, in] (GPT-2)
  AddOne,          // (1 + w) norms stored as multipliers (Gemma)
  StackExpert,     // one expert's matrix of a 3-D [n_in, n_out, n_expert] tensor (Mixtral)
  SplitLatentKv,   // DeepSeek's kv_b_proj -> attn_k_b (transposed per head) and attn_v_b
  GptOssExperts,   // one of a layer's four expert tensors (gpt_oss_experts.h)
  Skip,            // not needed (buffers such as rotary_emb.inv_freq)
};

struct Target {
  std::string name;
  Change change = Change::None;
  uint32_t permute_heads = 0;
  uint32_t expert = 0;  // StackExpert: its index in the stack; GptOssExperts: the part
  uint32_t layer = 0;   // GptOssExperts
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "N.rest" -> (N, rest).
std::optional<std::pair<uint32_t, std::string_view>> split_layer(std::string_view s) {
  uint32_t layer = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), layer);
  if (ec != std::errc() || end == s.data() || end == s.data() + s.size() || *end != '.') return std::nullopt;
  return std::make_pair(layer, s.substr(static_cast<std::size_t>(end - s.data()) + 1));
}

// Gemma 2 and 3: (1 + w) norms, output tied to the embedding.
bool is_gemma(const HfArchitecture& a) { return a.family == Family::Gemma2 || a.family == Family::Gemma3; }

std::optional<Target> map_gpt2_name(std::string_view name) {
  if (starts_with(name, "transformer.")) name.remove_prefix(12);
  if (name == "wte.weight") return Target{"token_embd.weight"};
  if (name == "wpe.weight") return Target{"position_embd.weight"};
  if (name == "ln_f.weight") return Target{"output_norm.weight"};
  if (name == "ln_f.bias") return Target{"output_norm.bias"};
  if (name == "lm_head.weight") return Target{"output.weight"};
  if (!starts_with(name, "h.")) return std::nullopt;
  const auto layer = split_layer(name.substr(2));
  if (!layer) return std::nullopt;
  const std::string blk = "blk." + std::to_string(layer->first) + ".";
  const std::string_view rest = layer->second;
  if (rest == "attn.bias" || rest == "attn.masked_bias") return Target{"", Change::Skip};
  static constexpr std::pair<std::string_view, std::string_view> kParts[] = {
      {"ln_1.", "attn_norm."},          {"ln_2.", "ffn_norm."},  {"attn.c_attn.", "attn_qkv."},
      {"attn.c_proj.", "attn_output."}, {"mlp.c_fc.", "ffn_up."}, {"mlp.c_proj.", "ffn_down."},
  };
  for (const auto& [hf, gguf] : kParts) {
    if (!starts_with(rest, hf)) continue;
    const std::string_view suffix = rest.substr(hf.size());
    if (suffix != "weight" && suffix != "bias") return std::nullopt;
    const bool conv1d = suffix == "weight" && hf != "ln_1." && hf != "ln_2.";
    return Target{blk + std::string(gguf) + std::string(suffix), conv1d ? Change::Transpose : Change::None};
  }
  return std::nullopt;
}

using NamePairs = std::span<const std::pair<std::string_view, std::string_view>>;

// Mixtral's block_sparse_moe.experts: w1 is the gate, w3 the up and w2 the
// down projection of expert E ("E.w1.weight").
constexpr std::pair<std::string_view, std::string_view> kMixtralExperts[] = {
    {"w1.weight", "ffn_gate_exps.weight"},
    {"w3.weight", "ffn_up_exps.weight"},
    {"w2.weight", "ffn_down_exps.weight"},
};
// DeepSeek's mlp.experts: "E.gate_proj.weight" and so on.
constexpr std::pair<std::string_view, std::string_view> kDeepseekExperts[] = {
    {"gate_proj.weight", "ffn_gate_exps.weight"},
    {"up_proj.weight", "ffn_up_exps.weight"},
    {"down_proj.weight", "ffn_down_exps.weight"},
};

// "E.<part>" of an experts list: expert E's matrix of the stack `parts` names.
std::optional<Target> map_expert(const HfArchitecture& a, const std::string& blk, std::string_view rest,
                                 NamePairs parts) {
  const auto expert = split_layer(rest);
  if (!expert || expert->first >= a.n_expert) return std::nullopt;
  for (const auto& [hf, gguf] : parts) {
    if (expert->second == hf) return Target{blk + std::string(gguf), Change::StackExpert, 0, expert->first};
  }
  return std::nullopt;
}

// DeepSeek V2/V3's attention and experts (the dense layers' MLP and the
// norms go the common way).
std::optional<Target> map_deepseek_part(const HfArchitecture& a, const std::string& blk, std::string_view rest) {
  static constexpr std::pair<std::string_view, std::string_view> kParts[] = {
      {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
      {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
      {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
      {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
      {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
      {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
  };
  for (const auto& [hf, gguf] : kParts) {
    if (rest == hf) return Target{blk + std::string(gguf)};
  }
  if (rest == "self_attn.kv_b_proj.weight") return Target{blk, Change::SplitLatentKv};
  if (!starts_with(rest, "mlp.experts.")) return std::nullopt;
  return map_expert(a, blk, rest.substr(12), kDeepseekExperts);
}

std::optional<Target> map_layer_part(const HfArchitecture& a, uint32_t layer, std::string_view rest) {
  const std::string blk = "blk." + std::to_string(layer) + ".";
  if (a.family == Family::Deepseek2) {
    if (auto t = map_deepseek_part(a, blk, rest)) return t;
  }
  const bool gemma = is_gemma(a);
  const Change norm = gemma ? Change::AddOne : Change::None;
  if (rest == "self_attn.rotary_emb.inv_freq") return Target{"", Change::Skip};
  if (rest == "input_layernorm.weight") return Target{blk + "attn_norm.weight", norm};
  // gpt-oss's post_attention_layernorm is its pre-FFN norm, which llama.cpp
  // names post_attention_norm.
  const bool gpt_oss = a.family == Family::GptOss;
  if (rest == "post_attention_layernorm.weight")
    return Target{blk + (gemma || gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), norm};
  if (gpt_oss) {
    if (rest == "self_attn.sinks") return Target{blk + "attn_sinks.weight"};
    if (rest == "mlp.router.weight") return Target{blk + "ffn_gate_inp.weight"};
    if (rest == "mlp.router.bias") return Target{blk + "ffn_gate_inp.bias"};
    if (starts_with(rest, "mlp.experts.")) {
      const auto part = gpt_oss_expert_part(rest.substr(12));
      if (!part) return std::nullopt;
      return Target{blk, Change::GptOssExperts, 0, static_cast<uint32_t>(*part), layer};
    }
  }
  if (gemma && rest == "pre_feedforward_layernorm.weight") return Target{blk + "ffn_norm.weight", norm};
  if (gemma && rest == "post_feedforward_layernorm.weight") return Target{blk + "post_ffw_norm.weight", norm};
  if (rest == "self_attn.q_norm.weight") return Target{blk + "attn_q_norm.weight", norm};
  if (rest == "self_attn.k_norm.weight") return Target{blk + "attn_k_norm.weight", norm};
  if (rest == "self_attn.qkv_proj.weight") return Target{blk + "attn_qkv.weight"};
  if (rest == "mlp.gate_up_proj.weight") return Target{blk + "ffn_up.weight"};
  if (a.n_expert > 0) {
    if (rest == "block_sparse_moe.gate.weight") return Target{blk + "ffn_gate_inp.weight"};
    if (starts_with(rest, "block_sparse_moe.experts.")) return map_expert(a, blk, rest.substr(25), kMixtralExperts);
  }
  static constexpr std::pair<std::string_view, std::string_view> kParts[] = {
      {"self_attn.q_proj.", "attn_q."}, {"self_attn.k_proj.", "attn_k."},  {"self_attn.v_proj.", "attn_v."},
      {"self_attn.o_proj.", "attn_output."}, {"mlp.gate_proj.", "ffn_gate."}, {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."},
  };
  for (const auto& [hf, gguf] : kParts) {
    if (!starts_with(rest, hf)) continue;
    const std::string_view suffix = rest.substr(hf.size());
    if (suffix != "weight" && suffix != "bias") return std::nullopt;
    Target t{blk + std::string(gguf) + std::string(suffix)};
    // The converter's LlamaModel.permute: Q with the query heads, K with the KV heads.
    if (a.family == Family::Llama && hf == "self_attn.q_proj.") t = {t.name, Change::PermuteHeads, a.n_head};
    if (a.family == Family::Llama && hf == "self_attn.k_proj.") t = {t.name, Change::PermuteHeads, a.n_head_kv};
    return t;
  }
  return std::nullopt;
}

std::optional<Target> map_name(const HfArchitecture& a, std::string_view name) {
  if (a.family == Family::Gpt2) return map_gpt2_name(name);
  if (name == "lm_head.weight") {
    // Gemma ties its output to the embedding; llama.cpp never reads lm_head.
    if (is_gemma(a)) return Target{"", Change::Skip};
    return Target{"output.weight"};
  }
  if (!starts_with(name, "model.")) return std::nullopt;
  name.remove_prefix(6);
  if (name == "embed_tokens.weight") return Target{"token_embd.weight"};
  if (name == "norm.weight") {
    const bool gemma = is_gemma(a);
    return Target{"output_norm.weight", gemma ? Change::AddOne : Change::None};
  }
  if (!starts_with(name, "layers.")) return std::nullopt;
  const auto layer = split_layer(name.substr(7));
  if (layer && layer->first >= a.n_layer && layer->first - a.n_layer < a.n_extra_layers) return Target{"", Change::Skip};
  if (!layer || layer->first >= a.n_layer) return std::nullopt;
  return map_layer_part(a, layer->first, layer->second);
}

class TensorBuilder {
 public:
  TensorBuilder(const CheckpointTensor& source, OwnedBuffers& owned) : src_(source.tensor), file_(source.file), owned_(owned) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ModelError(file_ + ": tensor '" + src_.name + "' " + what);
  }

  gguf::TensorInfo build(const Target& target) {
    const auto& shape = src_.shape;
    if (shape.empty() || shape.size() > 2) fail("has " + std::to_string(shape.size()) + " dimensions (1 or 2 expected)");
    for (uint64_t d : shape) {
      if (d == 0) fail("has an empty dimension");
    }
    gguf::TensorInfo t;
    t.name = target.name;
    t.n_dims = static_cast<uint32_t>(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) t.ne[d] = shape[shape.size() - 1 - d];
    const std::size_t esize = dtype_size(src_.dtype);
    const bool one_dim = shape.size() == 1;

    if (one_dim || target.change == Change::AddOne) {
      // The converter stores 1-D tensors (and the shifted norms) as F32.
      std::vector<float> values(src_.n_elements());
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = element_as_f32(src_.dtype, src_.data.data() + i * esize);
      if (target.change == Change::AddOne) {
        for (float& v : values) v += 1.0f;
      }
      if (target.change == Change::PermuteHeads) values = permute_heads(values, target.permute_heads);
      if (target.change == Change::Transpose) fail("is 1-D but its layer stores a matrix");
      t.type = gguf::TensorType::F32;
      t.data = own(reinterpret_cast<const std::byte*>(values.data()), values.size() * 4);
      return t;
    }

    t.type = gguf_type(src_.dtype);
    const uint64_t rows = shape[0], cols = shape[1];
    switch (target.change) {
      case Change::None: {
        const bool aligned = reinterpret_cast<std::uintptr_t>(src_.data.data()) % esize == 0;
        t.data = aligned ? src_.data : own(src_.data.data(), src_.data.size());
        return t;
      }
      case Change::PermuteHeads: {
        const uint32_t heads = target.permute_heads;
        if (heads == 0 || rows % (2 * uint64_t{heads}) != 0)
          fail("has " + std::to_string(rows) + " rows, not a whole number of heads of " + std::to_string(heads));
        const uint64_t head_rows = rows / heads, half = head_rows / 2, row_bytes = cols * esize;
        std::byte* out = allocate(src_.data.size());
        for (uint64_t h = 0; h < heads; ++h) {
          for (uint64_t i = 0; i < half; ++i) {
            for (uint64_t j = 0; j < 2; ++j) {
              const uint64_t from = h * head_rows + j * half + i, to = h * head_rows + 2 * i + j;
              std::memcpy(out + to * row_bytes, src_.data.data() + from * row_bytes, row_bytes);
            }
          }
        }
        t.data = {out, src_.data.size()};
        return t;
      }
      case Change::Transpose: {
        std::byte* out = allocate(src_.data.size());
        for (uint64_t r = 0; r < rows; ++r) {
          for (uint64_t c = 0; c < cols; ++c)
            std::memcpy(out + (c * rows + r) * esize, src_.data.data() + (r * cols + c) * esize, esize);
        }
        t.ne[0] = rows;
        t.ne[1] = cols;
        t.data = {out, src_.data.size()};
        return t;
      }
      case Change::AddOne:
      case Change::StackExpert:
      case Change::SplitLatentKv:
      case Change::GptOssExperts:
      case Change::Skip: break;
    }
    fail("cannot be converted");
  }

 private:
  // Rotate-half order to adjacent pairs within each head of a 1-D bias.
  std::vector<float> permute_heads(const std::vector<float>& v, uint32_t heads) const {
    if (heads == 0 || v.size() % (2 * std::size_t{heads}) != 0)
      fail("has " + std::to_string(v.size()) + " values, not a whole number of heads of " + std::to_string(heads));
    const std::size_t head = v.size() / heads, half = head / 2;
    std::vector<float> out(v.size());
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t i = 0; i < half; ++i) {
        out[h * head + 2 * i] = v[h * head + i];
        out[h * head + 2 * i + 1] = v[h * head + half + i];
      }
    }
    return out;
  }

  std::byte* allocate(std::size_t n) {
    owned_.push_back(std::make_unique<std::byte[]>(n));
    return owned_.back().get();
  }
  std::span<const std::byte> own(const std::byte* data, std::size_t n) {
    std::byte* p = allocate(n);
    std::memcpy(p, data, n);
    return {p, n};
  }

  const SafetensorsTensor& src_;
  const std::string& file_;
  OwnedBuffers& owned_;
};

// The experts' matrices of one GGUF tensor, in expert order: all present,
// all 2-D with one shape and one dtype, copied one after the other.
gguf::TensorInfo stack_experts(const std::string& name, const std::vector<const CheckpointTensor*>& experts,
                               OwnedBuffers& owned) {
  for (std::size_t e = 0; e < experts.size(); ++e) {
    if (!experts[e]) throw ModelError("checkpoint: expert " + std::to_string(e) + " of '" + name + "' is missing");
  }
  const CheckpointTensor& first = *experts[0];
  for (const CheckpointTensor* ct : experts) {
    const auto& t = ct->tensor;
    if (t.shape.size() != 2 || t.shape != first.tensor.shape || t.dtype != first.tensor.dtype)
      throw ModelError(ct->file + ": tensor '" + t.name + "' does not have the 2-D shape and type of '" +
                       first.tensor.name + "', the other experts of '" + name + "'");
    if (t.shape[0] == 0 || t.shape[1] == 0) throw ModelError(ct->file + ": tensor '" + t.name + "' is empty");
  }
  const std::size_t bytes = first.tensor.data.size();
  owned.push_back(std::make_unique<std::byte[]>(bytes * experts.size()));
  std::byte* out = owned.back().get();
  for (std::size_t e = 0; e < experts.size(); ++e)
    std::memcpy(out + e * bytes, experts[e]->tensor.data.data(), bytes);
  gguf::TensorInfo t;
  t.name = name;
  t.n_dims = 3;
  t.ne[0] = first.tensor.shape[1];
  t.ne[1] = first.tensor.shape[0];
  t.ne[2] = experts.size();
  t.type = gguf_type(first.tensor.dtype);
  t.data = {out, bytes * experts.size()};
  return t;
}

// kv_b_proj [n_head * (nope + value), kv_lora] as the converter splits it:
// attn_k_b [nope, kv_lora, n_head] (each head's key rows transposed, so that
// a query's unrotated part goes through it into the latent space) and
// attn_v_b [kv_lora, value, n_head] (each head's value rows as they are).
void split_latent_kv(const CheckpointTensor& ct, const HfArchitecture& a, const std::string& blk, OwnedBuffers& owned,
                     std::vector<gguf::TensorInfo>& out) {
  const SafetensorsTensor& src = ct.tensor;
  const uint64_t head_rows = uint64_t{a.nope_dim} + a.value_dim, R = a.kv_lora_rank;
  if (src.shape.size() != 2 || src.shape[0] != head_rows * a.n_head || src.shape[1] != R)
    throw ModelError(ct.file + ": tensor '" + src.name + "' is not [" + std::to_string(head_rows * a.n_head) + ", " +
                     std::to_string(R) + "] (n_head x (qk_nope_head_dim + v_head_dim), kv_lora_rank)");
  const std::size_t esize = dtype_size(src.dtype);
  const std::byte* in = src.data.data();
  const auto element = [&](uint64_t row, uint64_t col) { return in + (row * R + col) * esize; };
  const auto allocate = [&](gguf::TensorInfo& t, const std::string& name, uint64_t ne0, uint64_t ne1) {
    t.name = name;
    t.n_dims = 3;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = a.n_head;
    t.type = gguf_type(src.dtype);
    const std::size_t bytes = ne0 * ne1 * a.n_head * esize;
    owned.push_back(std::make_unique<std::byte[]>(bytes));
    t.data = {owned.back().get(), bytes};
    return owned.back().get();
  };
  gguf::TensorInfo k, v;
  std::byte* k_out = allocate(k, blk + "attn_k_b.weight", a.nope_dim, R);
  std::byte* v_out = allocate(v, blk + "attn_v_b.weight", R, a.value_dim);
  for (uint64_t h = 0; h < a.n_head; ++h) {
    for (uint64_t r = 0; r < R; ++r)
      for (uint64_t n = 0; n < a.nope_dim; ++n)
        std::memcpy(k_out + ((h * R + r) * a.nope_dim + n) * esize, element(h * head_rows + n, r), esize);
    for (uint64_t d = 0; d < a.value_dim; ++d)
      std::memcpy(v_out + (h * a.value_dim + d) * R * esize, element(h * head_rows + a.nope_dim + d, 0), R * esize);
  }
  out.push_back(std::move(k));
  out.push_back(std::move(v));
}

}  // namespace

gguf::TensorType gguf_type(Dtype d) {
  switch (d) {
    case Dtype::F32: return gguf::TensorType::F32;
    case Dtype::F16: return gguf::TensorType::F16;
    case Dtype::BF16: return gguf::TensorType::BF16;
    case Dtype::U8: break;  // never a weight's own type (map_tensors refuses it first)
  }
  return gguf::TensorType::F32;
}

float element_as_f32(Dtype d, const std::byte* p) {
  if (d == Dtype::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return d == Dtype::F16 ? quant::f16_to_f32(h) : quant::bf16_to_f32(h);
}

std::vector<gguf::TensorInfo> map_tensors(const Checkpoint& checkpoint, const HfArchitecture& a, OwnedBuffers& owned) {
  std::vector<gguf::TensorInfo> out;
  if (!a.rope_freqs.empty()) {
    gguf::TensorInfo t;
    t.name = "rope_freqs.weight";
    t.n_dims = 1;
    t.ne[0] = a.rope_freqs.size();
    t.type = gguf::TensorType::F32;
    const std::size_t n = a.rope_freqs.size() * sizeof(float);
    owned.push_back(std::make_unique<std::byte[]>(n));
    std::memcpy(owned.back().get(), a.rope_freqs.data(), n);
    t.data = {owned.back().get(), n};
    out.push_back(std::move(t));
  }
  std::map<std::string, std::vector<const CheckpointTensor*>> stacks;  // GGUF name -> its experts
  std::map<uint32_t, std::array<const CheckpointTensor*, kGptOssExpertParts>> gpt_oss_experts;  // layer -> parts
  for (const auto& ct : checkpoint.tensors()) {
    const std::optional<Target> target = map_name(a, ct.tensor.name);
    if (!target)
      throw ModelError(ct.file + ": tensor '" + ct.tensor.name + "' has no place in a " + a.hf_class + " model");
    if (target->change == Change::Skip) continue;
    if (target->change == Change::SplitLatentKv) {
      split_latent_kv(ct, a, target->name, owned, out);
      continue;
    }
    if (target->change == Change::GptOssExperts) {
      gpt_oss_experts[target->layer][target->expert] = &ct;
      continue;
    }
    if (ct.tensor.dtype == Dtype::U8)
      throw ModelError(ct.file + ": tensor '" + ct.tensor.name + "' has dtype U8, which is only read for gpt-oss's MXFP4 experts");
    if (target->change == Change::StackExpert) {
      auto& stack = stacks[target->name];
      stack.resize(a.n_expert);
      stack[target->expert] = &ct;
      continue;
    }
    out.push_back(TensorBuilder(ct, owned).build(*target));
  }
  for (const auto& [name, experts] : stacks) out.push_back(stack_experts(name, experts, owned));
  if (a.family == Family::GptOss) {
    for (uint32_t il = 0; il < a.n_layer; ++il) {
      const std::array<const CheckpointTensor*, kGptOssExpertParts> none{};
      const auto found = gpt_oss_experts.find(il);
      const auto parts = gpt_oss_expert_tensors("blk." + std::to_string(il) + ".",
                                                (found == gpt_oss_experts.end() ? none : found->second).data(),
                                                a.n_expert, a.n_embd, owned);
      out.insert(out.end(), parts.begin(), parts.end());
    }
  }
  // An untied model without its head would silently run with the embedding instead.
  const bool has_output = std::any_of(out.begin(), out.end(), [](const auto& t) { return t.name == "output.weight"; });
  if (!a.tied_embeddings && !has_output)
    throw ModelError("config.json: tie_word_embeddings is false but the checkpoint has no lm_head.weight");
  return out;
}

}  // namespace lamina::model::hf
