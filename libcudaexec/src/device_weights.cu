#include "device_weights.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "matmul.h"

namespace lamina::cudaexec::detail {
namespace {

// Visits every tensor of the model with the layout, copying when `upload`.
class Placer {
 public:
  Placer(BumpLayout& layout, bool upload) : layout_(layout), upload_(upload) {}

  DeviceMatrix matrix(const model::Matrix& m, const std::string& name) {
    if (!m) return {};
    const std::size_t bytes = quant::row_bytes(m.format, m.n_in) * m.n_out * m.n_expert;
    std::byte* dst = layout_.take<std::byte>(bytes);
    if (upload_) {
      (void)activation_format(m.format);  // throws for a format without a kernel
      copy(dst, m.data, bytes, name);
    }
    return {m.format, dst, m.n_in, m.n_out, m.n_expert};
  }

  const float* vector(const model::Vector& v, const std::string& name) {
    if (!v) return nullptr;
    float* dst = layout_.take<float>(v.n);
    if (upload_) copy(dst, v.data, v.n * sizeof(float), name);
    return dst;
  }

  // Matrices of one format and input length stacked into one (their rows
  // one after the other), so one product computes them all.
  DeviceMatrix stacked(std::initializer_list<const model::Matrix*> parts, const std::string& name) {
    const model::Matrix& first = **parts.begin();
    const std::size_t row = quant::row_bytes(first.format, first.n_in);
    uint32_t n_out = 0;
    for (const model::Matrix* m : parts) n_out += m->n_out;
    std::byte* dst = layout_.take<std::byte>(row * n_out);
    if (upload_) {
      (void)activation_format(first.format);
      std::size_t at = 0;
      for (const model::Matrix* m : parts) {
        copy(dst + at, m->data, row * m->n_out, name);
        at += row * m->n_out;
      }
    }
    return {first.format, dst, first.n_in, n_out, 1};
  }
  const float* stacked(std::initializer_list<const model::Vector*> parts, const std::string& name) {
    uint32_t n = 0;
    for (const model::Vector* v : parts) n += v->n;
    float* dst = layout_.take<float>(n);
    if (upload_) {
      uint32_t at = 0;
      for (const model::Vector* v : parts) {
        copy(dst + at, v->data, v->n * sizeof(float), name);
        at += v->n;
      }
    }
    return dst;
  }

  // Slices [first, first + count) of kTensorSlices of each row of m, one
  // matrix per slice, stacked: the row-parallel part of a tensor shard.
  DeviceMatrix k_slices(const model::Matrix& m, uint32_t first, uint32_t count, const std::string& name) {
    if (!m) return {};
    const uint32_t n_in = m.n_in / kTensorSlices;
    const std::size_t slice_row = quant::row_bytes(m.format, n_in);
    std::byte* dst = layout_.take<std::byte>(slice_row * m.n_out * count);
    if (upload_) {
      (void)activation_format(m.format);
      for (uint32_t i = 0; i < count; ++i) {
        const cudaError_t err = cudaMemcpy2D(dst + std::size_t{i} * m.n_out * slice_row, slice_row,
                                             m.data + std::size_t{first + i} * slice_row, m.row_bytes, slice_row,
                                             m.n_out, cudaMemcpyHostToDevice);
        if (err != cudaSuccess)
          throw CudaError("uploading " + name + " to the GPU failed: " + cudaGetErrorString(err));
      }
    }
    return {m.format, dst, n_in, m.n_out * count, 1};
  }

  // A matrix whose rows come in groups of `group` (its heads), each group's
  // last `tail` rows moved to its front (the rotated dims of latent-attention
  // queries, which the kernels rotate as leading dims).
  DeviceMatrix tail_rows_first(const model::Matrix& m, uint32_t group, uint32_t tail, const std::string& name) {
    if (!m) return {};
    const std::size_t row = quant::row_bytes(m.format, m.n_in);
    std::byte* dst = layout_.take<std::byte>(row * m.n_out);
    if (upload_) {
      (void)activation_format(m.format);
      if (group == 0 || m.n_out % group != 0 || tail > group)
        throw CudaError(name + ": " + std::to_string(m.n_out) + " rows are not whole groups of " +
                        std::to_string(group));
      std::vector<std::byte> host(row * m.n_out);
      const auto* src = static_cast<const std::byte*>(m.data);
      for (uint32_t g = 0; g < m.n_out / group; ++g)
        for (uint32_t r = 0; r < group; ++r) {
          const uint32_t from = g * group + (r < tail ? group - tail + r : r - tail);
          std::copy_n(src + std::size_t{from} * row, row, host.data() + (std::size_t{g} * group + r) * row);
        }
      copy(dst, host.data(), host.size(), name);
    }
    return {m.format, dst, m.n_in, m.n_out, 1};
  }

 private:
  void copy(void* dst, const void* src, std::size_t bytes, const std::string& name) {
    const cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) throw CudaError("uploading " + name + " to the GPU failed: " + cudaGetErrorString(err));
  }
  BumpLayout& layout_;
  bool upload_;
};

// Whether matrices can be stacked into one: all present, one format and input length.
template <class... M>
bool stackable(const model::Matrix& first, const M&... rest) {
  return first && first.n_expert == 1 &&
         ((rest && rest.n_expert == 1 && rest.format == first.format && rest.n_in == first.n_in) && ...);
}

void place_all(const model::ModelConfig& c, const model::Weights& host, LayerRange range, Placer& p,
               DeviceWeights& w) {
  const bool tied = host.output.data == host.token_embd.data;
  if (range.embeds() || (range.heads(c) && tied)) w.token_embd = p.matrix(host.token_embd, "token_embd");
  if (range.embeds()) w.position_embd = p.matrix(host.position_embd, "position_embd");
  if (range.heads(c)) {
    w.output = tied ? w.token_embd : p.matrix(host.output, "output");
    w.output_norm = p.vector(host.output_norm, "output_norm");
    w.output_norm_bias = p.vector(host.output_norm_bias, "output_norm bias");
  }
  w.layers.resize(host.layers.size());
  for (std::size_t i = range.first; i < range.end; ++i) {
    const model::LayerWeights& l = host.layers[i];
    DeviceLayer& d = w.layers[i];
    const std::string n = "blk." + std::to_string(i) + ".";
    d.attn_norm = p.vector(l.attn_norm, n + "attn_norm");
    d.attn_norm_bias = p.vector(l.attn_norm_bias, n + "attn_norm bias");
    if (const model::LatentAttentionConfig& a = c.mla; c.latent_attention()) {
      const uint32_t head = a.nope_dim + a.rope_dim;
      d.wq = p.tail_rows_first(l.wq, head, a.rope_dim, n + "attn_q");
      d.wq_a = p.matrix(l.wq_a, n + "attn_q_a");
      d.q_a_norm = p.vector(l.q_a_norm, n + "attn_q_a_norm");
      d.wq = l.wq_b ? p.tail_rows_first(l.wq_b, head, a.rope_dim, n + "attn_q_b") : d.wq;
      d.wkv_a = p.matrix(l.wkv_a, n + "attn_kv_a_mqa");
      d.kv_a_norm = p.vector(l.kv_a_norm, n + "attn_kv_a_norm");
      d.wk_b = p.matrix(l.wk_b, n + "attn_k_b");
      d.wv_b = p.matrix(l.wv_b, n + "attn_v_b");
    } else if (stackable(l.wq, l.wk, l.wv) && (l.bq && l.bk && l.bv || !l.bq && !l.bk && !l.bv)) {
      // One product for Q, K and V: fewer launches, more blocks for K and V.
      d.wqkv = p.stacked({&l.wq, &l.wk, &l.wv}, n + "attn_q/k/v");
      if (l.bq) d.bqkv = p.stacked({&l.bq, &l.bk, &l.bv}, n + "attn_q/k/v bias");
    } else {
      d.wq = p.matrix(l.wq, n + "attn_q");
      d.wk = p.matrix(l.wk, n + "attn_k");
      d.wv = p.matrix(l.wv, n + "attn_v");
      d.wqkv = p.matrix(l.wqkv, n + "attn_qkv");
      d.bq = p.vector(l.bq, n + "attn_q bias");
      d.bk = p.vector(l.bk, n + "attn_k bias");
      d.bv = p.vector(l.bv, n + "attn_v bias");
      d.bqkv = p.vector(l.bqkv, n + "attn_qkv bias");
    }
    d.q_norm = p.vector(l.q_norm, n + "attn_q_norm");
    d.k_norm = p.vector(l.k_norm, n + "attn_k_norm");
    d.attn_sinks = p.vector(l.attn_sinks, n + "attn_sinks");
    d.wo = p.matrix(l.wo, n + "attn_output");
    d.bo = p.vector(l.bo, n + "attn_output bias");
    d.post_attn_norm = p.vector(l.post_attn_norm, n + "post_attention_norm");
    d.ffn_norm = p.vector(l.ffn_norm, n + "ffn_norm");
    d.ffn_norm_bias = p.vector(l.ffn_norm_bias, n + "ffn_norm bias");
    const bool gated = c.ffn() == model::FfnKind::GatedSilu || c.ffn() == model::FfnKind::GatedGelu;
    if (gated && stackable(l.w_gate, l.w_up) && !l.b_up) {
      // [gate; up] in one product, as a fused gate/up tensor is.
      d.w_up = p.stacked({&l.w_gate, &l.w_up}, n + "ffn_gate/up");
    } else {
      d.w_gate = p.matrix(l.w_gate, n + "ffn_gate");
      d.w_up = p.matrix(l.w_up, n + "ffn_up");
    }
    d.w_down = p.matrix(l.w_down, n + "ffn_down");
    d.b_up = p.vector(l.b_up, n + "ffn_up bias");
    d.b_down = p.vector(l.b_down, n + "ffn_down bias");
    d.post_ffn_norm = p.vector(l.post_ffn_norm, n + "post_ffw_norm");
    d.router = p.matrix(l.router, n + "ffn_gate_inp");
    d.gate_exps = p.matrix(l.gate_exps, n + "ffn_gate_exps");
    d.up_exps = p.matrix(l.up_exps, n + "ffn_up_exps");
    d.down_exps = p.matrix(l.down_exps, n + "ffn_down_exps");
    d.router_bias = p.vector(l.router_bias, n + "ffn_gate_inp bias");
    d.gate_exps_bias = p.vector(l.gate_exps_bias, n + "ffn_gate_exps bias");
    d.up_exps_bias = p.vector(l.up_exps_bias, n + "ffn_up_exps bias");
    d.down_exps_bias = p.vector(l.down_exps_bias, n + "ffn_down_exps bias");
    d.expert_selection_bias = p.vector(l.expert_selection_bias, n + "exp_probs_b");
    d.gate_shexp = p.matrix(l.gate_shexp, n + "ffn_gate_shexp");
    d.up_shexp = p.matrix(l.up_shexp, n + "ffn_up_shexp");
    d.down_shexp = p.matrix(l.down_shexp, n + "ffn_down_shexp");
  }
}

// Rows [first, first + count) of m, and values of v: views, no copies.
model::Matrix rows_of(const model::Matrix& m, uint32_t first, uint32_t count) {
  if (!m) return m;
  model::Matrix part = m;
  part.data = m.data + std::size_t{first} * m.row_bytes;
  part.n_out = count;
  return part;
}
model::Vector part_of(const model::Vector& v, uint32_t first, uint32_t count) {
  return v ? model::Vector{v.data + first, count} : v;
}

// One rank's part of every layer (tensor_parallel.h); `c` is the whole model.
void place_shard(const model::ModelConfig& c, const model::Weights& host, TensorShard shard, Placer& p,
                 DeviceWeights& w) {
  const uint32_t r = shard.rank, per_rank = shard.slices_per_rank();
  const model::ModelConfig local = shard_config(c, shard.n_ranks);
  w.token_embd = p.matrix(host.token_embd, "token_embd");
  w.position_embd = p.matrix(host.position_embd, "position_embd");
  const uint32_t vocab_first = r * local.n_vocab;
  const uint32_t vocab_rows = std::min(c.n_vocab, vocab_first + local.n_vocab) - vocab_first;
  if (host.output.data == host.token_embd.data) {
    w.output = w.token_embd;
    w.output.data = static_cast<const std::byte*>(w.token_embd.data) +
                    std::size_t{vocab_first} * quant::row_bytes(host.token_embd.format, host.token_embd.n_in);
    w.output.n_out = vocab_rows;
  } else {
    w.output = p.matrix(rows_of(host.output, vocab_first, vocab_rows), "output");
  }
  w.output_norm = p.vector(host.output_norm, "output_norm");
  w.output_norm_bias = p.vector(host.output_norm_bias, "output_norm bias");
  w.layers.resize(host.layers.size());
  const uint32_t q_rows = local.n_head * c.head_dim_k, k_rows = local.n_head_kv * c.head_dim_k;
  const uint32_t v_rows = local.n_head_kv * c.head_dim_v, ff = local.n_ff;
  for (std::size_t i = 0; i < host.layers.size(); ++i) {
    const model::LayerWeights& l = host.layers[i];
    DeviceLayer& d = w.layers[i];
    const std::string n = "blk." + std::to_string(i) + ".";
    d.attn_norm = p.vector(l.attn_norm, n + "attn_norm");
    d.attn_norm_bias = p.vector(l.attn_norm_bias, n + "attn_norm bias");
    // This rank's query heads and the KV heads they read, from separate or fused tensors.
    const bool fused = static_cast<bool>(l.wqkv);
    const model::Matrix& mq = fused ? l.wqkv : l.wq;
    const model::Vector& vq = fused ? l.bqkv : l.bq;
    const uint32_t k_at = fused ? c.q_dim() : 0, v_at = fused ? c.q_dim() + c.k_dim() : 0;
    const model::Matrix q = rows_of(mq, r * q_rows, q_rows);
    const model::Matrix k = rows_of(fused ? l.wqkv : l.wk, k_at + r * k_rows, k_rows);
    const model::Matrix v = rows_of(fused ? l.wqkv : l.wv, v_at + r * v_rows, v_rows);
    const model::Vector bq = part_of(vq, r * q_rows, q_rows);
    const model::Vector bk = part_of(fused ? l.bqkv : l.bk, k_at + r * k_rows, k_rows);
    const model::Vector bv = part_of(fused ? l.bqkv : l.bv, v_at + r * v_rows, v_rows);
    if (stackable(q, k, v) && (bq && bk && bv || !bq && !bk && !bv)) {
      d.wqkv = p.stacked({&q, &k, &v}, n + "attn_q/k/v");
      if (bq) d.bqkv = p.stacked({&bq, &bk, &bv}, n + "attn_q/k/v bias");
    } else {
      d.wq = p.matrix(q, n + "attn_q");
      d.wk = p.matrix(k, n + "attn_k");
      d.wv = p.matrix(v, n + "attn_v");
      d.bq = p.vector(bq, n + "attn_q bias");
      d.bk = p.vector(bk, n + "attn_k bias");
      d.bv = p.vector(bv, n + "attn_v bias");
    }
    d.q_norm = p.vector(l.q_norm, n + "attn_q_norm");
    d.k_norm = p.vector(l.k_norm, n + "attn_k_norm");
    d.attn_sinks = p.vector(part_of(l.attn_sinks, r * local.n_head, local.n_head), n + "attn_sinks");
    d.wo = p.k_slices(l.wo, r * per_rank, per_rank, n + "attn_output");
    d.bo = p.vector(l.bo, n + "attn_output bias");
    d.post_attn_norm = p.vector(l.post_attn_norm, n + "post_attention_norm");
    d.ffn_norm = p.vector(l.ffn_norm, n + "ffn_norm");
    d.ffn_norm_bias = p.vector(l.ffn_norm_bias, n + "ffn_norm bias");
    // This rank's FFN columns, from separate or fused [gate; up] tensors.
    const bool fused_gate_up = !l.w_gate && l.w_up.n_out == 2 * c.n_ff;
    const model::Matrix gate = l.w_gate ? rows_of(l.w_gate, r * ff, ff)
                               : fused_gate_up ? rows_of(l.w_up, r * ff, ff)
                                               : model::Matrix{};
    const model::Matrix up = rows_of(l.w_up, (fused_gate_up ? c.n_ff : 0) + r * ff, ff);
    const bool gated = c.ffn() == model::FfnKind::GatedSilu || c.ffn() == model::FfnKind::GatedGelu;
    if (gated && stackable(gate, up) && !l.b_up) {
      d.w_up = p.stacked({&gate, &up}, n + "ffn_gate/up");
    } else {
      d.w_gate = p.matrix(gate, n + "ffn_gate");
      d.w_up = p.matrix(up, n + "ffn_up");
    }
    d.b_up = p.vector(part_of(l.b_up, r * ff, ff), n + "ffn_up bias");
    d.w_down = p.k_slices(l.w_down, r * per_rank, per_rank, n + "ffn_down");
    d.b_down = p.vector(l.b_down, n + "ffn_down bias");
    d.post_ffn_norm = p.vector(l.post_ffn_norm, n + "post_ffw_norm");
  }
}

void place(const model::ModelConfig& c, const model::Weights& host, LayerRange range, TensorShard shard, Placer& p,
           DeviceWeights& w) {
  if (shard)
    place_shard(c, host, shard, p, w);
  else
    place_all(c, host, range, p, w);
}

}  // namespace

DeviceMatrix DeviceMatrix::expert(uint32_t e) const {
  DeviceMatrix m = *this;
  m.n_expert = 1;
  m.data = static_cast<const std::byte*>(data) + std::size_t{e} * n_out * quant::row_bytes(format, n_in);
  return m;
}

// The tensor-core kernels copy whole 16-byte chunks around each weight
// segment, up to 47 bytes past a matrix's last byte: the weights end with
// this much slack.
constexpr std::size_t kTailSlack = 256;

std::size_t device_weight_bytes(const model::ModelConfig& config, const model::Weights& weights, LayerRange range,
                                TensorShard shard) {
  BumpLayout layout;
  Placer p(layout, false);
  DeviceWeights w;
  place(config, weights, range, shard, p, w);
  return layout.size() + kTailSlack;
}

DeviceWeights upload_weights(const model::ModelConfig& config, const model::Weights& weights, LayerRange range,
                             TensorShard shard) {
  DeviceWeights w;
  w.storage = DeviceAllocation(device_weight_bytes(config, weights, range, shard), "the model weights");
  BumpLayout layout(w.storage.get());
  Placer p(layout, true);
  place(config, weights, range, shard, p, w);
  return w;
}

}  // namespace lamina::cudaexec::detail
