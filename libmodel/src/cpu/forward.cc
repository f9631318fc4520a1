// One forward pass for every architecture: the ArchSpec flags choose the
// norm, the attention inputs, the FFN and the extras, per layer:
//   x += post_norm(attention(norm(x)));  x += post_norm(ffn(norm(x)))
#include "lamina/model/forward.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>

#include "attention.h"
#include "latent_attention.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/reference.h"
#include "lamina/quant/thread_pool.h"
#include "linear.h"
#include "moe.h"
#include "ops.h"
#include "rope.h"
#include "vector_kernels.h"

namespace lamina::model {

using cpu::add_in_place;

struct CpuForward::State {
  State(const Model& m, const ForwardOptions& o);

  // after_layer(i), when given, runs after layer i (-1: the embedding).
  // With `hidden_out`, the wanted rows' final-norm states go there instead
  // of through the output head.
  void step(std::span<const TokenInput> batch, float* logits_out,
            const std::function<void(int)>& after_layer = {}, float* hidden_out = nullptr);
  // decode() and hidden_states(): `batch` in max_batch chunks, `width`
  // values per wanted row into `out`.
  std::span<const float> run_chunks(std::span<const TokenInput> batch, cpu::Workspace& out, std::size_t width,
                                    bool hidden);
  // Throws ModelError for ids, positions or slots out of range.
  void check(std::span<const TokenInput> batch) const;
  void embed(std::span<const TokenInput> batch);
  void norm(const Vector& w, const Vector& b, const float* x, float* out, std::size_t n_rows) const;
  void attention_block(uint32_t layer, std::span<const TokenInput> batch);
  // attn_out [n][n_head * head_dim_v] -> x += post_norm(attn_output(...)).
  void attention_output(const LayerWeights& l, std::size_t n);
  void ffn_block(uint32_t layer, std::size_t n);
  // Rotates with the windowed layers' tables when `swa` (gemma3's second base).
  void rope(float* rows, std::size_t stride, uint32_t n_heads, std::span<const TokenInput> batch, bool swa);
  void rope_tables(std::span<const TokenInput> batch, const std::vector<double>& freqs, double magnitude,
                   std::vector<double>& cos_out, std::vector<double>& sin_out) const;
  void head_norm(float* rows, uint32_t n_heads, std::size_t n, const Vector& w) const;
  float gelu(float x) const { return options.exact_activations ? cpu::gelu_tanh(x) : cpu::gelu_f16_table(x); }

  const Model& model;
  const ModelConfig& c;
  const Weights& w;
  ForwardOptions options;
  quant::ThreadPool pool;
  KvCache cache;
  cpu::Linear linear;
  bool ran_a_batch = false;  // run_chunks has run before
  cpu::Attention attention;
  cpu::MixtureOfExperts moe;
  cpu::LatentAttention latent;
  std::vector<double> inv_freq;      // rope_inverse_frequencies
  double rope_magnitude = 1.0;       // rope_magnitude (YaRN's growth of cos and sin)
  std::vector<double> inv_freq_swa;  // the windowed layers' own base (empty: none)

  // Workspace, sized once for max_batch rows.
  cpu::Workspace x, h, q, k, v, attn_out, proj, gate, up, logits, row_tmp;
  cpu::Workspace hidden;  // hidden_states()' output
  std::vector<double> cos_t, sin_t;  // per token and rotated pair
  std::vector<double> cos_swa, sin_swa;  // the same with inv_freq_swa
};

namespace {

int default_threads(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

CpuForward::State::State(const Model& m, const ForwardOptions& o)
    : model(m),
      c(m.config()),
      w(m.weights()),
      options(o),
      pool(static_cast<std::size_t>(default_threads(o.n_threads))),
      cache(c, {context_size(c, o.n_ctx), o.n_seq, o.kv_type, o.kv_blocks}),
      linear(pool, o.exact_activations),
      attention(static_cast<int>(pool.num_threads())),
      moe(c, o.max_batch),
      latent(c, {cache, linear, attention, pool}, o.max_batch) {
  if (options.max_batch == 0) throw ModelError("max_batch must be positive");
  if (options.pack_weights) {
    std::vector<const Matrix*> matrices;
    std::vector<Matrix> experts;
    for (const LayerWeights& l : w.layers) {
      for (const Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wqkv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.wq_a, &l.wq_b,
                              &l.wkv_a, &l.gate_shexp, &l.up_shexp, &l.down_shexp})
        matrices.push_back(m);
      // Each expert (or latent attention head) of a stack on its own: the
      // products take them one by one (an absent stack is one empty matrix,
      // which is skipped).
      for (const Matrix* m : {&l.gate_exps, &l.up_exps, &l.down_exps, &l.wk_b, &l.wv_b}) {
        for (uint32_t e = 0; e < m->n_expert; ++e) experts.push_back(m->expert(e));
      }
    }
    for (const Matrix& e : experts) matrices.push_back(&e);
    matrices.push_back(&w.output);
    // The file's pages of a packed matrix leave resident memory (the tied
    // output's stay readable for the embedding lookups: they come back on use).
    const auto bytes = [](const Matrix& m) { return std::size_t{m.n_out} * m.row_bytes; };
    const gguf::GgufFile& file = model.file();
    const auto release = [&file, bytes](const Matrix& m) { file.release_pages(m.data, bytes(m)); };
    const auto read_ahead = [&file, bytes](const Matrix& m) { file.read_ahead(m.data, bytes(m)); };
    if (options.pack_in_background) {
      // The copies not yet swapped in sit beside the file's pages: an eighth
      // of the weights at most, and no more than 256 MiB (a decode step of
      // an 8B model lasts about as long as packing that much takes).
      std::size_t weight_bytes = 0;
      for (const Matrix* m : matrices) weight_bytes += bytes(*m);
      const std::size_t max_pending = std::clamp(weight_bytes / 8, std::size_t{32} << 20, std::size_t{256} << 20);
      linear.prepare_in_background(matrices, release, read_ahead, max_pending);
    } else {
      linear.prepare(matrices, release, read_ahead);
    }
  }
  options.n_ctx = cache.n_ctx();
  const std::size_t B = options.max_batch;
  const std::size_t ff = c.arch->gate_up == Layout::Fused ? 2 * std::size_t{c.n_ff} : c.n_ff;
  x.resize(B * c.n_embd);
  h.resize(B * c.n_embd);
  q.resize(B * c.q_dim());
  k.resize(B * c.k_dim());
  v.resize(B * c.v_dim());
  attn_out.resize(B * c.n_head * c.head_dim_v);
  proj.resize(B * std::max<std::size_t>(c.n_embd, std::size_t{c.q_dim()} + c.k_dim() + c.v_dim()));
  gate.resize(B * ff);
  up.resize(B * ff);
  row_tmp.resize(c.n_embd);
  inv_freq = rope_inverse_frequencies(c, w, false);
  rope_magnitude = model::rope_magnitude(c);
  inv_freq_swa = rope_inverse_frequencies(c, w, true);
  cos_t.resize(B * inv_freq.size());
  sin_t.resize(B * inv_freq.size());
  cos_swa.resize(B * inv_freq_swa.size());
  sin_swa.resize(B * inv_freq_swa.size());
}

void CpuForward::State::norm(const Vector& weight, const Vector& bias, const float* in, float* out,
                             std::size_t n_rows) const {
  for (std::size_t r = 0; r < n_rows; ++r) {
    const float* xr = in + r * c.n_embd;
    float* yr = out + r * c.n_embd;
    if (c.arch->norm == NormKind::Rms) {
      cpu::rms_norm(xr, weight.data, c.norm_eps, c.n_embd, yr);
    } else {
      cpu::layer_norm(xr, weight.data, bias ? bias.data : nullptr, c.norm_eps, c.n_embd, yr);
    }
  }
}

void CpuForward::State::check(std::span<const TokenInput> batch) const {
  check_batch(batch, batch_limits(c, w, cache.n_ctx(), cache.n_seq()));
  cache.check_positions(batch);
}

void CpuForward::State::embed(std::span<const TokenInput> batch) {
  const float scale = c.embedding_scale();
  for (std::size_t t = 0; t < batch.size(); ++t) {
    float* xr = x.data() + t * c.n_embd;
    quant::dequantize_row_ref(w.token_embd.format, w.token_embd.row(static_cast<std::size_t>(batch[t].token)), xr,
                              c.n_embd);
    if (scale != 1.0f) {
      for (uint32_t i = 0; i < c.n_embd; ++i) xr[i] *= scale;
    }
    if (w.position_embd) {
      quant::dequantize_row_ref(w.position_embd.format, w.position_embd.row(batch[t].pos), row_tmp.data(), c.n_embd);
      add_in_place(xr, row_tmp.data(), c.n_embd);
    }
  }
}

void CpuForward::State::rope(float* rows, std::size_t stride, uint32_t n_heads, std::span<const TokenInput> batch,
                             bool swa) {
  const uint32_t half = c.rope.n_dims / 2;
  const double* cos_p = swa ? cos_swa.data() : cos_t.data();
  const double* sin_p = swa ? sin_swa.data() : sin_t.data();
  for (std::size_t t = 0; t < batch.size(); ++t) {
    for (uint32_t hd = 0; hd < n_heads; ++hd)
      cpu::rope_head(rows + t * stride + std::size_t{hd} * c.head_dim_k, c.rope.kind, c.rope.n_dims,
                     cos_p + t * half, sin_p + t * half);
  }
}

void CpuForward::State::rope_tables(std::span<const TokenInput> batch, const std::vector<double>& freqs,
                                    double magnitude, std::vector<double>& cos_out,
                                    std::vector<double>& sin_out) const {
  const std::size_t half = freqs.size();
  for (std::size_t t = 0; t < batch.size(); ++t) {
    for (std::size_t i = 0; i < half; ++i) {
      const double theta = static_cast<double>(batch[t].pos) * freqs[i];
      cos_out[t * half + i] = magnitude * std::cos(theta);
      sin_out[t * half + i] = magnitude * std::sin(theta);
    }
  }
}

void CpuForward::State::head_norm(float* rows, uint32_t n_heads, std::size_t n, const Vector& weight) const {
  for (std::size_t i = 0; i < n * n_heads; ++i) {
    float* head = rows + i * c.head_dim_k;
    cpu::rms_norm(head, weight.data, c.norm_eps, c.head_dim_k, head);
  }
}

void CpuForward::State::attention_block(uint32_t layer, std::span<const TokenInput> batch) {
  const LayerWeights& l = w.layers[layer];
  const std::size_t n = batch.size();
  const uint32_t qd = c.q_dim(), kd = c.k_dim(), vd = c.v_dim();
  norm(l.attn_norm, l.attn_norm_bias, x.data(), h.data(), n);
  if (c.latent_attention()) {
    latent.run(l, layer, batch, h.data(), cos_t.data(), sin_t.data(), attn_out.data());
    return attention_output(l, n);
  }

  if (l.wqkv) {
    const std::size_t fused = std::size_t{qd} + kd + vd;
    linear.apply(l.wqkv, h.data(), n, proj.data());
    for (std::size_t t = 0; t < n; ++t) {
      float* row = proj.data() + t * fused;
      if (l.bqkv) add_in_place(row, l.bqkv.data, fused);
      std::copy(row, row + qd, q.data() + t * qd);
      std::copy(row + qd, row + qd + kd, k.data() + t * kd);
      std::copy(row + qd + kd, row + fused, v.data() + t * vd);
    }
  } else {
    linear.apply_shared({{&l.wq, q.data()}, {&l.wk, k.data()}, {&l.wv, v.data()}}, h.data(), n);
    for (std::size_t t = 0; t < n; ++t) {
      if (l.bq) add_in_place(q.data() + t * qd, l.bq.data, qd);
      if (l.bk) add_in_place(k.data() + t * kd, l.bk.data, kd);
      if (l.bv) add_in_place(v.data() + t * vd, l.bv.data, vd);
    }
  }
  if (l.q_norm) head_norm(q.data(), c.n_head, n, l.q_norm);
  if (l.k_norm) head_norm(k.data(), c.n_head_kv, n, l.k_norm);
  if (c.rope.kind != RopeKind::None) {
    const bool swa = c.layer_uses_swa_rope(layer);
    rope(q.data(), qd, c.n_head, batch, swa);
    rope(k.data(), kd, c.n_head_kv, batch, swa);
  }
  for (std::size_t t = 0; t < n; ++t) {
    cache.store_k(batch[t].seq, layer, batch[t].pos, k.data() + t * kd);
    cache.store_v(batch[t].seq, layer, batch[t].pos, v.data() + t * vd);
  }
  const cpu::AttentionShape shape{c.n_head,
                                  c.n_head_kv,
                                  c.head_dim_k,
                                  c.head_dim_v,
                                  c.attn_scale,
                                  c.attn_softcap,
                                  c.layer_uses_window(layer) ? c.sliding_window : 0,
                                  l.attn_sinks ? l.attn_sinks.data : nullptr};
  attention.run(shape, cache, layer, batch, q.data(), attn_out.data(), pool);
  attention_output(l, n);
}

void CpuForward::State::attention_output(const LayerWeights& l, std::size_t n) {
  linear.apply(l.wo, attn_out.data(), n, proj.data());
  for (std::size_t t = 0; t < n; ++t) {
    float* row = proj.data() + t * c.n_embd;
    if (l.bo) add_in_place(row, l.bo.data, c.n_embd);
    if (l.post_attn_norm) cpu::rms_norm(row, l.post_attn_norm.data, c.norm_eps, c.n_embd, row);
    add_in_place(x.data() + t * c.n_embd, row, c.n_embd);
  }
}

void CpuForward::State::ffn_block(uint32_t layer, std::size_t n) {
  const LayerWeights& l = w.layers[layer];
  const std::size_t ff = c.n_ff;
  norm(l.ffn_norm, l.ffn_norm_bias, x.data(), h.data(), n);

  const FfnKind kind = c.ffn(layer);
  switch (kind) {
    case FfnKind::MoeGatedSilu:
      moe.run(l, h.data(), n, proj.data(), linear);
      break;
    case FfnKind::Gelu:
      linear.apply(l.w_up, h.data(), n, up.data());
      for (std::size_t t = 0; t < n; ++t) {
        float* row = up.data() + t * ff;
        if (l.b_up) add_in_place(row, l.b_up.data, ff);
        for (std::size_t i = 0; i < ff; ++i) row[i] = gelu(row[i]);
      }
      linear.apply(l.w_down, up.data(), n, proj.data());
      break;
    case FfnKind::GatedSilu:
    case FfnKind::GatedGelu: {
      const bool gated_gelu = kind == FfnKind::GatedGelu;
      if (c.arch->gate_up == Layout::Fused) {
        // One product gives [gate; up] per row; split it into the two buffers.
        // Ascending rows: each row's destination lies before its source.
        linear.apply(l.w_up, h.data(), n, gate.data());
        for (std::size_t t = 0; t < n; ++t) {
          const float* row = gate.data() + t * 2 * ff;
          std::copy(row + ff, row + 2 * ff, up.data() + t * ff);
          std::copy(row, row + ff, gate.data() + t * ff);
        }
      } else {
        linear.apply_shared({{&l.w_gate, gate.data()}, {&l.w_up, up.data()}}, h.data(), n);
      }
      // On the pool: the activation (a double exp per value) costs about as
      // much as a small matrix product. Each value is computed the same way
      // wherever it runs.
      pool.parallel_for(n * ff, 256, [&](std::size_t begin, std::size_t end) {
        if (!gated_gelu) return cpu::silu_mul(gate.data() + begin, up.data() + begin, gate.data() + begin, end - begin);
        for (std::size_t i = begin; i < end; ++i) gate[i] = gelu(gate[i]) * up[i];
      });
      linear.apply(l.w_down, gate.data(), n, proj.data());
      break;
    }
  }
  for (std::size_t t = 0; t < n; ++t) {
    float* row = proj.data() + t * c.n_embd;
    if (l.b_down) add_in_place(row, l.b_down.data, c.n_embd);
    if (l.post_ffn_norm) cpu::rms_norm(row, l.post_ffn_norm.data, c.norm_eps, c.n_embd, row);
    add_in_place(x.data() + t * c.n_embd, row, c.n_embd);
  }
}

void CpuForward::State::step(std::span<const TokenInput> batch, float* logits_out,
                             const std::function<void(int)>& after_layer, float* hidden_out) {
  // Between steps: the only place packed copies come in (same bits).
  linear.adopt_packed();
  const std::size_t n = batch.size();
  embed(batch);
  if (c.rope.kind != RopeKind::None) {
    rope_tables(batch, inv_freq, rope_magnitude, cos_t, sin_t);
    if (!inv_freq_swa.empty()) rope_tables(batch, inv_freq_swa, 1.0, cos_swa, sin_swa);
  }
  if (after_layer) after_layer(-1);
  for (uint32_t layer = 0; layer < c.n_layer; ++layer) {
    attention_block(layer, batch);
    ffn_block(layer, n);
    if (after_layer) after_layer(static_cast<int>(layer));
  }
  // Only rows that want logits go through the output norm and head.
  std::size_t n_out = 0;
  for (std::size_t t = 0; t < n; ++t) {
    if (!batch[t].logits) continue;
    norm(w.output_norm, w.output_norm_bias, x.data() + t * c.n_embd, h.data() + n_out * c.n_embd, 1);
    ++n_out;
  }
  if (n_out == 0) return;
  if (hidden_out) {
    std::copy_n(h.data(), n_out * c.n_embd, hidden_out);
    return;
  }
  linear.apply(w.output, h.data(), n_out, logits_out);
  if (c.final_softcap > 0.0f) {
    for (std::size_t i = 0; i < n_out * c.n_vocab; ++i) logits_out[i] = cpu::softcap(logits_out[i], c.final_softcap);
  }
}

CpuForward::CpuForward(const Model& model, const ForwardOptions& options)
    : state_(std::make_unique<State>(model, options)) {}

CpuForward::~CpuForward() = default;

std::span<const float> CpuForward::State::run_chunks(std::span<const TokenInput> batch, cpu::Workspace& out,
                                                     std::size_t width, bool hidden) {
  check(batch);
  std::size_t n_wanted = 0;
  for (const auto& t : batch) n_wanted += t.logits ? 1 : 0;
  if (out.size() < n_wanted * width) out.resize(n_wanted * width);
  std::size_t out_row = 0;
  // The first batch (a prompt, usually) keeps the cores: the background
  // packing waits for its end.
  struct FirstBatch {
    cpu::Linear& linear;
    bool first;
    ~FirstBatch() {
      if (first) linear.pause_background(false);
    }
  } first_batch{linear, !ran_a_batch};
  if (first_batch.first) linear.pause_background(true);
  ran_a_batch = true;
  for (std::size_t start = 0; start < batch.size(); start += options.max_batch) {
    const auto chunk = batch.subspan(start, std::min<std::size_t>(options.max_batch, batch.size() - start));
    float* dst = out.data() + out_row * width;
    step(chunk, hidden ? nullptr : dst, {}, hidden ? dst : nullptr);
    for (const auto& t : chunk) out_row += t.logits ? 1 : 0;
  }
  return {out.data(), n_wanted * width};
}

std::span<const float> CpuForward::decode(std::span<const TokenInput> batch) {
  return state_->run_chunks(batch, state_->logits, state_->c.n_vocab, false);
}

std::span<const float> CpuForward::hidden_states(std::span<const TokenInput> batch) {
  return state_->run_chunks(batch, state_->hidden, state_->c.n_embd, true);
}

std::vector<float> CpuForward::trace_last_token(std::span<const TokenInput> batch, std::vector<float>& logits) {
  State& s = *state_;
  if (batch.empty() || batch.size() > s.options.max_batch)
    throw ModelError("trace_last_token: the batch must hold 1 to max_batch tokens");
  s.check(batch);
  std::vector<TokenInput> rows(batch.begin(), batch.end());
  for (auto& t : rows) t.logits = false;
  rows.back().logits = true;
  const std::size_t E = s.c.n_embd, last = rows.size() - 1;
  std::vector<float> trace((s.c.n_layer + 1) * E);
  logits.resize(s.c.n_vocab);
  s.step(rows, logits.data(), [&](int layer) {
    std::copy_n(s.x.data() + last * E, E, trace.data() + (layer + 1) * E);
  });
  return trace;
}

std::string CpuForward::backend_name() const { return std::string("CPU (") + quant::kernel_target_name() + ")"; }

const ModelConfig& CpuForward::config() const { return state_->c; }
void CpuForward::finish_background_packing() { state_->linear.finish_background(); }
uint32_t CpuForward::n_ctx() const { return state_->cache.n_ctx(); }
uint32_t CpuForward::n_seq() const { return state_->cache.n_seq(); }
int CpuForward::n_threads() const { return static_cast<int>(state_->pool.num_threads()); }
std::size_t CpuForward::kv_cache_bytes() const { return state_->cache.bytes(); }

uint32_t CpuForward::kv_blocks() const { return state_->cache.n_blocks(); }
void CpuForward::set_block_table(uint32_t seq, std::span<const uint32_t> blocks) {
  state_->cache.set_block_table(seq, blocks);
}
void CpuForward::copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos) { state_->cache.copy_block(src, dst, n_pos); }
std::size_t CpuForward::kv_block_bytes() const { return state_->cache.block_bytes(); }

}  // namespace lamina::model
