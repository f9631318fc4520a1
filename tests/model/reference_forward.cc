#include "reference_forward.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <string>

#include "reference_model.h"
#include "reference_ops.h"

namespace lamina::model::reference {

// Keys and values of every past position of one layer, [pos][kv_head * head_dim].
struct LayerCache {
  std::vector<Activations> keys;
  std::vector<Activations> values;
};

struct ModelState {
  ModelConfig config;
  ModelWeights weights;
  ReferenceOptions options;
  std::vector<LayerCache> cache;
  size_t n_past = 0;
};

namespace {

struct Qkv {
  Activations q, k, v;
};

bool quantize_activations(const ModelState& s) { return s.options.emulate_ggml_activation_quant; }

void add_in_place(Activations& x, const Activations& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

Activations norm(const ModelState& s, std::span<const double> x, const Vector& w, const Vector& b) {
  return s.config.arch.norm == NormKind::Rms ? rms_norm(x, w, s.config.norm_eps)
                                             : layer_norm(x, w, b, s.config.norm_eps);
}

double activation(const ModelState& s, double x) {
  if (s.config.arch.activation == Activation::Silu) return silu(x);
  return s.options.emulate_ggml_gelu_f16 ? gelu_ggml_f16(x) : gelu_tanh(x);
}

Activations embed(const ModelState& s, int32_t token, size_t pos) {
  const ModelConfig& c = s.config;
  if (token < 0 || static_cast<uint32_t>(token) >= c.n_vocab) {
    throw std::out_of_range("token id " + std::to_string(token) + " outside the vocabulary");
  }
  const float* row = s.weights.token_embd.row(static_cast<size_t>(token));
  Activations x(row, row + c.n_embd);
  if (c.arch.scale_embeddings) {
    for (double& v : x) v *= std::sqrt(static_cast<double>(c.n_embd));
  }
  if (c.arch.learned_positions) {
    if (pos >= s.weights.position_embd.rows) throw std::out_of_range("position beyond position_embd");
    const float* p = s.weights.position_embd.row(pos);
    for (size_t i = 0; i < x.size(); ++i) x[i] += p[i];
  }
  return x;
}

Qkv project_qkv(const ModelState& s, const LayerWeights& l, const Activations& x) {
  const ModelConfig& c = s.config;
  const bool q8 = quantize_activations(s);
  if (!c.arch.fused_qkv) {
    return {matvec(l.wq, x, q8, l.bq), matvec(l.wk, x, q8, l.bk), matvec(l.wv, x, q8, l.bv)};
  }
  const Activations qkv = matvec(l.wqkv, x, q8, l.bqkv);
  const size_t q_end = size_t{c.n_head} * c.head_dim_k;
  const size_t k_end = q_end + size_t{c.n_head_kv} * c.head_dim_k;
  return {Activations(qkv.begin(), qkv.begin() + q_end),
          Activations(qkv.begin() + q_end, qkv.begin() + k_end),
          Activations(qkv.begin() + k_end, qkv.end())};
}

bool is_local_layer(const ModelConfig& c, size_t il) {
  if (c.arch.sliding_window_on_even_layers) return il % 2 == 0;
  if (c.arch.sliding_window_pattern) return il % c.window_period < c.window_period - 1;
  return false;
}

// YaRN as archs/README.md states it: pair i keeps the share r_i of its
// unscaled angle and takes 1 - r_i of the angle divided by the factor, r_i
// falling linearly from 1 to 0 between the pairs that turn 32 and 1 times
// over the original context; returned as rope_freqs-style divisors.
Vector yarn_divisors(const ModelConfig& c) {
  const auto pair_at = [&](double turns) {
    return c.n_rot * std::log(c.yarn_orig_ctx / (turns * 2 * std::numbers::pi)) / (2 * std::log(c.rope_base));
  };
  const double low = std::max(0.0, std::floor(pair_at(32)));
  const double high = std::min(c.n_rot - 1.0, std::ceil(pair_at(1)));
  Vector divisors(c.n_rot / 2);
  for (size_t i = 0; i < divisors.size(); ++i) {
    const double r = 1.0 - std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
    divisors[i] = static_cast<float>(1.0 / (r + (1.0 - r) / c.yarn_factor));
  }
  return divisors;
}

// Per-head RMSNorm (qwen3) and RoPE, in place, for `n_heads` heads.
void position_heads(const ModelState& s, Activations& x, size_t n_heads, const Vector& head_norm,
                    size_t pos, size_t il) {
  const ModelConfig& c = s.config;
  // gemma3's local layers rotate with their own base and no scaling.
  const bool own_base = c.rope_base_swa > 0 && is_local_layer(c, il);
  const double base = own_base ? c.rope_base_swa : c.rope_base;
  const double scaled_pos = static_cast<double>(pos) * (own_base ? 1.0 : c.rope_scale);
  for (size_t h = 0; h < n_heads; ++h) {
    std::span<double> head(x.data() + h * c.head_dim_k, c.head_dim_k);
    if (!head_norm.empty()) {
      const Activations normed = rms_norm(head, head_norm, c.norm_eps);
      std::copy(normed.begin(), normed.end(), head.begin());
    }
    if (c.arch.rope == RopeKind::Norm) rope_norm(head, scaled_pos, c.n_rot, base, s.weights.rope_freqs);
    if (c.arch.rope == RopeKind::Neox && c.yarn_factor > 0) {
      // The divisors round to f32; at ~1e-7 relative that is far below the checks.
      rope_neox(head, scaled_pos, c.n_rot, base, yarn_divisors(c));
      const double magnitude = 1.0 + 0.1 * std::log(c.yarn_factor);
      for (size_t i = 0; i < c.n_rot; ++i) head[i] *= magnitude;
    } else if (c.arch.rope == RopeKind::Neox) {
      rope_neox(head, scaled_pos, c.n_rot, base, s.weights.rope_freqs);
    }
  }
}

// Causal softmax attention of the current position's queries over the
// cache (which already holds this position), with GQA, optional logit
// softcap and optional sliding window. Returns [n_head * head_dim_v].
Activations attention(const ModelState& s, const Activations& q, const LayerCache& cache,
                      bool sliding, const Vector& sinks) {
  const ModelConfig& c = s.config;
  const size_t pos = cache.keys.size() - 1;
  const size_t first = sliding && pos + 1 > c.sliding_window ? pos + 1 - c.sliding_window : 0;
  const size_t group = c.n_head / c.n_head_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim_k));
  Activations out(size_t{c.n_head} * c.head_dim_v, 0.0);
  for (size_t h = 0; h < c.n_head; ++h) {
    const size_t kv_head = h / group;
    const double* qh = q.data() + h * c.head_dim_k;
    std::vector<double> scores;
    for (size_t p = first; p <= pos; ++p) {
      const double* kh = cache.keys[p].data() + kv_head * c.head_dim_k;
      double score = std::inner_product(qh, qh + c.head_dim_k, kh, 0.0) * scale;
      if (c.attn_softcap > 0.0) score = softcap(score, c.attn_softcap);
      scores.push_back(score);
    }
    // A sink is one more score whose probability is dropped.
    if (!sinks.empty()) scores.push_back(sinks[h]);
    softmax(scores);
    double* oh = out.data() + h * c.head_dim_v;
    for (size_t p = first; p <= pos; ++p) {
      const double* vh = cache.values[p].data() + kv_head * c.head_dim_v;
      for (size_t i = 0; i < c.head_dim_v; ++i) oh[i] += scores[p - first] * vh[i];
    }
  }
  return out;
}

// deepseek2's rotation: NORM pairs over the n_rot rotated values, with
// YaRN's frequency ramp where the file asks for it. llama.cpp cancels
// YaRN's magnitude factor for this architecture, so none is applied.
void rope_latent(const ModelConfig& c, double* v, size_t pos) {
  const double n = c.n_rot;
  double low = 0.0, high = 0.0;
  if (c.yarn_orig_ctx > 0) {
    const auto dim_of = [&](double turns) {
      return n * std::log(c.yarn_orig_ctx / (turns * 2.0 * M_PI)) / (2.0 * std::log(c.rope_base));
    };
    low = std::max(0.0, std::floor(dim_of(32.0)));
    high = std::min(n - 1.0, std::ceil(dim_of(1.0)));
  }
  for (size_t i = 0; i < c.n_rot / 2; ++i) {
    const double extrap = static_cast<double>(pos) * std::pow(c.rope_base, -2.0 * static_cast<double>(i) / n);
    double theta = extrap;
    if (c.yarn_orig_ctx > 0) {
      const double ramp = 1.0 - std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
      theta = extrap / c.yarn_factor * (1.0 - ramp) + extrap * ramp;
    }
    const double x0 = v[2 * i], x1 = v[2 * i + 1];
    v[2 * i] = x0 * std::cos(theta) - x1 * std::sin(theta);
    v[2 * i + 1] = x0 * std::sin(theta) + x1 * std::cos(theta);
  }
}

// Multi-head latent attention, expanded: each head's key [K_b[h] c; k_pe]
// and value V_b[h] c from the cached latent c and rotated k_pe. Where ggml
// quantizes activations into quantized K_b/V_b, it runs the absorbed form
// (q_nope through K_b^T, the weighted latent through V_b), whose inputs are
// then the ones rounded; so does this pass in that case.
Activations latent_attention_block(ModelState& s, size_t il, const Activations& x) {
  const ModelConfig& c = s.config;
  const LayerWeights& l = s.weights.layers[il];
  const bool q8 = quantize_activations(s);
  const size_t R = c.kv_lora_rank, rot = c.n_rot, nope = c.nope_dim, qhd = nope + rot;
  Activations q = c.q_lora_rank > 0 ? matvec(l.wq_b, rms_norm(matvec(l.wq_a, x, q8), l.q_a_norm, c.norm_eps), q8)
                                    : matvec(l.wq, x, q8);
  Activations kv = matvec(l.wkv_a, x, q8);
  const Activations latent = rms_norm(std::span<const double>(kv.data(), R), l.kv_a_norm, c.norm_eps);
  std::copy(latent.begin(), latent.end(), kv.begin());
  rope_latent(c, kv.data() + R, s.n_past);
  for (size_t h = 0; h < c.n_head; ++h) rope_latent(c, q.data() + h * qhd + nope, s.n_past);
  LayerCache& cache = s.cache[il];
  cache.keys.push_back(kv);
  const size_t n_pos = cache.keys.size();
  const bool absorbed = q8 && l.k_b[0].format != quant::QuantFormat::F32;
  double mscale = 1.0;
  if (c.yarn_orig_ctx > 0) mscale = 1.0 + c.yarn_log_multiplier * std::log(c.yarn_factor);
  const double scale = mscale * mscale / std::sqrt(static_cast<double>(qhd));

  Activations heads(size_t{c.n_head} * c.value_dim, 0.0);
  for (size_t h = 0; h < c.n_head; ++h) {
    const double* qh = q.data() + h * qhd;
    const Matrix& kb = l.k_b[h];  // kv_lora rows of nope values
    Activations q_latent;
    if (absorbed) q_latent = matvec(kb, std::span<const double>(qh, nope), true);
    std::vector<double> scores;
    for (size_t p = 0; p < n_pos; ++p) {
      const Activations& ck = cache.keys[p];
      double score = 0.0;
      if (absorbed) {
        for (size_t r = 0; r < R; ++r) score += q_latent[r] * ck[r];
      } else {
        for (size_t d = 0; d < nope; ++d) {
          double k = 0.0;
          for (size_t r = 0; r < R; ++r) k += double{kb.row(r)[d]} * ck[r];
          score += qh[d] * k;
        }
      }
      for (size_t d = 0; d < rot; ++d) score += qh[nope + d] * ck[R + d];
      scores.push_back(score * scale);
    }
    softmax(scores);
    double* out = heads.data() + h * c.value_dim;
    if (absorbed) {
      Activations weighted(R, 0.0);
      for (size_t p = 0; p < n_pos; ++p)
        for (size_t r = 0; r < R; ++r) weighted[r] += scores[p] * cache.keys[p][r];
      const Activations v = matvec(l.v_b[h], weighted, true);
      std::copy(v.begin(), v.end(), out);
    } else {
      for (size_t p = 0; p < n_pos; ++p) {
        const Activations v = matvec(l.v_b[h], std::span<const double>(cache.keys[p].data(), R), false);
        for (size_t d = 0; d < c.value_dim; ++d) out[d] += scores[p] * v[d];
      }
    }
  }
  return matvec(l.wo, heads, q8);
}

Activations attention_block(ModelState& s, size_t il, const Activations& x) {
  const ModelConfig& c = s.config;
  if (c.arch.latent_attention) return latent_attention_block(s, il, x);
  const LayerWeights& l = s.weights.layers[il];
  const size_t pos = s.n_past;
  Qkv qkv = project_qkv(s, l, x);
  position_heads(s, qkv.q, c.n_head, l.q_norm, pos, il);
  position_heads(s, qkv.k, c.n_head_kv, l.k_norm, pos, il);
  LayerCache& cache = s.cache[il];
  cache.keys.push_back(std::move(qkv.k));
  cache.values.push_back(std::move(qkv.v));
  const bool sliding = is_local_layer(c, il);
  const Activations heads = attention(s, qkv.q, cache, sliding, l.attn_sinks);
  return matvec(l.wo, heads, quantize_activations(s), l.bo);
}

// down(act(gate) * up) for the given projections.
Activations gated_ffn(const ModelState& s, const Activations& gate, const Activations& up,
                      const Matrix& down) {
  Activations h(gate.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = activation(s, gate[i]) * up[i];
  return matvec(down, h, quantize_activations(s));
}

// gpt-oss's expert: biases on all three projections and the clamped SwiGLU.
Activations oai_expert(const ModelState& s, const LayerWeights& l, size_t e, const Activations& x) {
  const bool q8 = quantize_activations(s);
  const Activations gate = matvec(l.expert_gate[e], x, q8, l.expert_gate_bias[e]);
  const Activations up = matvec(l.expert_up[e], x, q8, l.expert_up_bias[e]);
  Activations a(gate.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double g = std::min(gate[i], 7.0);
    a[i] = g / (1.0 + std::exp(-1.702 * g)) * (std::clamp(up[i], -7.0, 7.0) + 1.0);
  }
  return matvec(l.expert_down[e], a, q8, l.expert_down_bias[e]);
}

// Router (with gpt-oss's bias; softmax, or sigmoid), top-k experts by gate (+ selection bias),
// their weights renormalised to sum to 1 where the model says so, times the
// weight scale; plus the shared experts.
Activations mixture_of_experts(const ModelState& s, const LayerWeights& l, const Activations& x) {
  const ModelConfig& c = s.config;
  const bool q8 = quantize_activations(s);
  Activations probs = matvec(l.router, x, q8, l.router_bias);
  if (c.sigmoid_gating) {
    for (double& p : probs) p = 1.0 / (1.0 + std::exp(-p));
  } else {
    softmax(probs);
  }
  Activations select = probs;
  for (size_t e = 0; e < l.expert_bias.size(); ++e) select[e] += l.expert_bias[e];
  std::vector<size_t> order(c.n_expert);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return select[a] > select[b]; });
  order.resize(c.n_expert_used);
  double total = 0.0;
  for (size_t e : order) total += probs[e];
  if (!c.expert_weights_norm) total = 1.0;
  total /= c.expert_weights_scale;

  Activations out(c.n_embd, 0.0);
  for (size_t e : order) {
    const Activations y = c.arch.oai_experts ? oai_expert(s, l, e, x)
                                             : gated_ffn(s, matvec(l.expert_gate[e], x, q8),
                                                         matvec(l.expert_up[e], x, q8), l.expert_down[e]);
    for (size_t i = 0; i < out.size(); ++i) out[i] += probs[e] / total * y[i];
  }
  if (!l.shexp_gate.values.empty()) {
    const Activations y = gated_ffn(s, matvec(l.shexp_gate, x, q8), matvec(l.shexp_up, x, q8), l.shexp_down);
    add_in_place(out, y);
  }
  return out;
}

Activations ffn_block(const ModelState& s, size_t il, const LayerWeights& l, const Activations& x) {
  const bool q8 = quantize_activations(s);
  switch (il < s.config.n_dense_lead ? FfnKind::Gated : s.config.arch.ffn) {
    case FfnKind::Gated:
      return gated_ffn(s, matvec(l.ffn_gate, x, q8), matvec(l.ffn_up, x, q8), l.ffn_down);
    case FfnKind::GatedFused: {
      const Activations both = matvec(l.ffn_up, x, q8);
      const size_t n_ff = s.config.n_ff;
      return gated_ffn(s, Activations(both.begin(), both.begin() + n_ff),
                       Activations(both.begin() + n_ff, both.end()), l.ffn_down);
    }
    case FfnKind::Plain: {
      Activations h = matvec(l.ffn_up, x, q8, l.ffn_up_bias);
      for (double& v : h) v = activation(s, v);
      return matvec(l.ffn_down, h, q8, l.ffn_down_bias);
    }
    case FfnKind::MixtureOfExperts:
      return mixture_of_experts(s, l, x);
  }
  throw std::logic_error("unhandled FfnKind");
}

// x += attention(norm(x)); x += ffn(norm(x)), with gemma2's post-norms.
void transformer_block(ModelState& s, size_t il, Activations& x) {
  const LayerWeights& l = s.weights.layers[il];
  const bool post = s.config.arch.post_norms;
  Activations attn = attention_block(s, il, norm(s, x, l.attn_norm, l.attn_norm_bias));
  if (post) attn = rms_norm(attn, l.post_attention_norm, s.config.norm_eps);
  add_in_place(x, attn);
  Activations ffn = ffn_block(s, il, l, norm(s, x, l.ffn_norm, l.ffn_norm_bias));
  if (post) ffn = rms_norm(ffn, l.post_ffw_norm, s.config.norm_eps);
  add_in_place(x, ffn);
}

std::vector<float> output_logits(const ModelState& s, const Activations& x) {
  const Activations h = norm(s, x, s.weights.output_norm, s.weights.output_norm_bias);
  const Activations logits = matvec(s.weights.output, h, quantize_activations(s));
  std::vector<float> out(logits.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const double l = s.config.final_softcap > 0.0 ? softcap(logits[i], s.config.final_softcap) : logits[i];
    out[i] = static_cast<float>(l);
  }
  return out;
}

}  // namespace

ReferenceSession::ReferenceSession(const gguf::GgufFile& file, const ReferenceOptions& options)
    : state_(std::make_unique<ModelState>()) {
  state_->config = read_config(file);
  state_->weights = load_weights(file, state_->config);
  state_->options = options;
  state_->cache.resize(state_->config.n_layer);
}

ReferenceSession::~ReferenceSession() = default;
ReferenceSession::ReferenceSession(ReferenceSession&&) noexcept = default;
ReferenceSession& ReferenceSession::operator=(ReferenceSession&&) noexcept = default;

std::vector<float> ReferenceSession::append(int32_t token) {
  ModelState& s = *state_;
  Activations x = embed(s, token, s.n_past);
  for (size_t il = 0; il < s.config.n_layer; ++il) transformer_block(s, il, x);
  ++s.n_past;
  return output_logits(s, x);
}

size_t ReferenceSession::n_past() const { return state_->n_past; }
size_t ReferenceSession::n_vocab() const { return state_->config.n_vocab; }

std::vector<float> reference_logits(const gguf::GgufFile& file, std::span<const int32_t> tokens,
                                    const ReferenceOptions& options) {
  ReferenceSession session(file, options);
  std::vector<float> all;
  all.reserve(tokens.size() * session.n_vocab());
  for (int32_t token : tokens) {
    const std::vector<float> logits = session.append(token);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace lamina::model::reference
