// Host wrappers around the attention kernels for the tests and the
// benchmark: one sequence in a one-layer cache, launched as asked.
#include <cuda_fp16.h>

#include <algorithm>
#include <random>
#include <vector>

#include "attention.h"
#include "latent_attention.h"
#include "cuda_check.h"
#include "device_memory.h"
#include "launch_timing.h"
#include "lamina/cudaexec/device.h"
#include "lamina/cudaexec/kernel_check.h"

namespace lamina::cudaexec {
namespace {

// A typed device array over the executor's owning allocation.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n), memory_(std::max<std::size_t>(n, 1) * sizeof(T), "attention check") {}
  T* get() const { return static_cast<T*>(memory_.get()); }
  void upload(const std::vector<T>& v) {
    LAMINA_CUDA_CHECK(cudaMemcpy(get(), v.data(), std::min(v.size(), n_) * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    LAMINA_CUDA_CHECK(cudaMemcpy(v.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  std::size_t n_;
  detail::DeviceAllocation memory_;
};

// One sequence's rows [n_pos][dim] as a one-layer paged cache holds them,
// its blocks in reverse order: a kernel that ignored the block table would
// read other positions' rows.
struct PagedRows {
  std::vector<__half> rows;
  std::vector<uint32_t> table;
};

PagedRows paged_rows(const float* x, uint32_t n_pos, uint32_t dim) {
  const uint32_t n_blocks = model::kv_blocks_for(n_pos), block = model::kKvBlockPositions;
  PagedRows paged{std::vector<__half>(std::size_t{n_blocks} * block * dim, __float2half_rn(0.0f)),
                  std::vector<uint32_t>(n_blocks)};
  for (uint32_t b = 0; b < n_blocks; ++b) paged.table[b] = n_blocks - 1 - b;
  for (uint32_t p = 0; p < n_pos; ++p)
    for (uint32_t d = 0; d < dim; ++d)
      paged.rows[(std::size_t{paged.table[p / block]} * block + p % block) * dim + d] =
          __float2half_rn(x[std::size_t{p} * dim + d]);
  return paged;
}

// Everything one sequence's attention needs on the device, and its launches.
class AttentionRun {
 public:
  AttentionRun(const AttentionCheck& c, const float* q, const float* k, const float* v)
      : c_(c),
        n_ctx_(c.past + c.n_rows),
        shape_{c.n_head, c.n_head_kv, c.head_dim, c.head_dim, c.scale, c.softcap, c.window},
        sinks_(c.sinks ? c.n_head : 0),
        q_(std::size_t{c.n_rows} * c.n_head * c.head_dim),
        k_(std::size_t{model::kv_blocks_for(n_ctx_)} * model::kKvBlockPositions * c.n_head_kv * c.head_dim),
        v_(std::size_t{model::kv_blocks_for(n_ctx_)} * model::kKvBlockPositions * c.n_head_kv * c.head_dim),
        table_(model::kv_blocks_for(n_ctx_)),
        seq_(c.n_rows),
        pos_(c.n_rows),
        tiles_(c.n_rows),
        workspace_(detail::attention_workspace_floats(shape_, c.n_rows, detail::attention_spans(n_ctx_ - 1))),
        out_(std::size_t{c.n_rows} * c.n_head * c.head_dim) {
    q_.upload(std::vector<float>(q, q + std::size_t{c.n_rows} * c.n_head * c.head_dim));
    if (c.sinks) {
      sinks_.upload(std::vector<float>(c.sinks, c.sinks + c.n_head));
      shape_.sinks = sinks_.get();
    }
    const uint32_t kv_dim = c.n_head_kv * c.head_dim;
    const PagedRows paged_k = paged_rows(k, n_ctx_, kv_dim), paged_v = paged_rows(v, n_ctx_, kv_dim);
    k_.upload(paged_k.rows);
    v_.upload(paged_v.rows);
    table_.upload(paged_k.table);
    seq_.upload(std::vector<uint32_t>(c.n_rows, 0));
    std::vector<uint32_t> pos(c.n_rows);
    for (uint32_t r = 0; r < c.n_rows; ++r) pos[r] = c.past + r;
    pos_.upload(pos);
    kv_ = {k_.get(), v_.get(), table_.get(), 0, 1, model::kv_blocks_for(n_ctx_), kv_dim, kv_dim};
    LAMINA_CUDA_CHECK(cudaMemset(out_.get(), 0xFF, std::size_t{c.n_rows} * c.n_head * c.head_dim * sizeof(float)));
  }

  // Uploads the tiles for `split` and says how to launch; false where the
  // split does not apply to the shape.
  bool prepare(AttentionSplit split) {
    const uint32_t n = c_.n_rows;
    std::vector<uint32_t> seq(n, 0);
    std::vector<detail::AttentionTile> tiles(n);
    split_ = split;
    if (split == AttentionSplit::Decode) {
      tiles[0] = {0, 1};
      plan_ = detail::plan_decode_attention(shape_, 1, detail::attention_spans(n_ctx_ - 1));
    } else {
      plan_ = detail::plan_attention(shape_, seq.data(), n, c_.past + n - 1, device_info(0).sm_count, tiles.data());
      if (split == AttentionSplit::PerSpan) plan_.per_tile = false;
      if (split == AttentionSplit::PerTile) {
        if (plan_.single_warp || c_.head_dim > detail::kAttentionPerTileMaxHeadDim) return false;
        plan_.per_tile = true;
      }
    }
    tiles_.upload(tiles);
    return true;
  }

  void enqueue() {
    const std::size_t row_floats = std::size_t{c_.n_head} * c_.head_dim;
    if (split_ == AttentionSplit::Decode) {
      // Each row alone, as separate decode steps run it (tile 0: one token at row 0 of the pointers).
      for (uint32_t r = 0; r < c_.n_rows; ++r) {
        detail::attention(shape_, kv_, 0, q_.get() + r * row_floats, row_floats, seq_.get() + r, pos_.get() + r,
                          tiles_.get(), 1, plan_, workspace_.get(), out_.get() + r * row_floats, row_floats, nullptr);
      }
      return;
    }
    detail::attention(shape_, kv_, 0, q_.get(), row_floats, seq_.get(), pos_.get(), tiles_.get(), c_.n_rows, plan_,
                      workspace_.get(), out_.get(), row_floats, nullptr);
  }

  std::vector<float> output() const {
    LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
    return out_.download();
  }

 private:
  AttentionCheck c_;
  uint32_t n_ctx_;
  detail::AttentionShape shape_;
  DeviceArray<float> sinks_;
  DeviceArray<float> q_;
  DeviceArray<__half> k_, v_;
  DeviceArray<uint32_t> table_, seq_, pos_;
  DeviceArray<detail::AttentionTile> tiles_;
  DeviceArray<float> workspace_;
  DeviceArray<float> out_;
  detail::KvView kv_;
  AttentionSplit split_ = AttentionSplit::Auto;
  detail::AttentionPlan plan_;
};

}  // namespace

std::vector<float> check_attention(const AttentionCheck& c, const float* q, const float* k, const float* v,
                                   AttentionSplit split) {
  AttentionRun run(c, q, k, v);
  if (!run.prepare(split)) return {};
  run.enqueue();
  LAMINA_CUDA_CHECK(cudaGetLastError());
  return run.output();
}

std::vector<float> check_latent_attention(const LatentAttentionCheck& c, const float* q, const float* keys,
                                          bool decode) {
  const uint32_t n_ctx = c.past + c.n_rows, n_spans = detail::attention_spans(n_ctx - 1);
  const detail::AttentionShape shape{c.n_head, 1, c.key_dim, c.value_dim, c.scale};
  const std::size_t q_row = std::size_t{c.n_head} * c.key_dim, out_row = std::size_t{c.n_head} * c.value_dim;
  DeviceArray<float> q_dev(c.n_rows * q_row), out(c.n_rows * out_row);
  const PagedRows paged = paged_rows(keys, n_ctx, c.key_dim);
  DeviceArray<__half> k_dev(paged.rows.size());
  DeviceArray<uint32_t> table(paged.table.size()), seq(c.n_rows), pos(c.n_rows);
  DeviceArray<float> workspace(detail::attention_workspace_floats(shape, c.n_rows, n_spans));
  q_dev.upload(std::vector<float>(q, q + c.n_rows * q_row));
  k_dev.upload(paged.rows);
  table.upload(paged.table);
  seq.upload(std::vector<uint32_t>(c.n_rows, 0));
  std::vector<uint32_t> positions(c.n_rows);
  for (uint32_t r = 0; r < c.n_rows; ++r) positions[r] = c.past + r;
  pos.upload(positions);
  LAMINA_CUDA_CHECK(cudaMemset(out.get(), 0xFF, c.n_rows * out_row * sizeof(float)));
  const detail::KvView kv{k_dev.get(), nullptr, table.get(), 0, 1, static_cast<uint32_t>(paged.table.size()),
                          c.key_dim, 0};
  if (decode) {
    for (uint32_t r = 0; r < c.n_rows; ++r)
      detail::latent_attention(shape, kv, 0, q_dev.get() + r * q_row, q_row, seq.get() + r, pos.get() + r, 1, n_spans,
                               workspace.get(), out.get() + r * out_row, out_row, nullptr);
  } else {
    // Spans of the latest position only, as the executor plans a chunk.
    detail::latent_attention(shape, kv, 0, q_dev.get(), q_row, seq.get(), pos.get(), c.n_rows, n_spans,
                             workspace.get(), out.get(), out_row, nullptr);
  }
  LAMINA_CUDA_CHECK(cudaGetLastError());
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  return out.download();
}

double time_attention_us(const AttentionCheck& c, AttentionSplit split, int reps) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t n_ctx = c.past + c.n_rows;
  std::vector<float> q(std::size_t{c.n_rows} * c.n_head * c.head_dim), k(n_ctx * c.n_head_kv * c.head_dim),
      v(k.size());
  for (auto* x : {&q, &k, &v})
    for (float& e : *x) e = normal(rng);
  AttentionRun run(c, q.data(), k.data(), v.data());
  if (!run.prepare(split)) return -1.0;
  constexpr int kBatch = 10;
  return detail::median_launch_us([&] { run.enqueue(); }, 3, kBatch, std::max(1, reps / kBatch));
}

}  // namespace lamina::cudaexec
