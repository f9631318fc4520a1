#include "linear.h"

#include <atomic>
#include <exception>
#include <unordered_set>

#include "lamina/quant/kernels.h"
#include "lamina/quant/reference.h"

namespace lamina::model::cpu {

Linear::Linear(quant::ThreadPool& pool, bool exact)
    : pool_(pool), exact_(exact), row_scratch_(pool.num_threads()) {}

namespace {
bool is_quantized(quant::QuantFormat f) { return quant::format_traits(f).block_elems > 1; }
}  // namespace

void Linear::apply_exact(const Matrix& w, const float* x, std::size_t n_rows, float* y) {
  pool_.run_on_all([&](std::size_t thread) {
    const auto [begin, end] = pool_.thread_range(w.n_out, 16, thread);
    std::vector<float>& row = row_scratch_[thread];
    row.resize(w.n_in);
    for (std::size_t o = begin; o < end; ++o) {
      quant::dequantize_row_ref(w.format, w.row(o), row.data(), w.n_in);
      for (std::size_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * w.n_in;
        double sum = 0.0;
        for (std::size_t i = 0; i < w.n_in; ++i) sum += static_cast<double>(row[i]) * xr[i];
        y[r * w.n_out + o] = static_cast<float>(sum);
      }
    }
  });
}

namespace {
// The matrices of `ws` that packing pays for: present, one expert, a format
// this CPU runs faster packed, not already packed, each once.
std::vector<const Matrix*> worth_packing(std::span<const Matrix* const> ws,
                                         const std::unordered_map<const std::byte*, quant::PackedWeights>& packed) {
  std::vector<const Matrix*> todo;
  std::unordered_set<const std::byte*> seen;
  for (const Matrix* w : ws) {
    if (!*w || w->n_expert != 1 || !quant::packed_layout_is_faster(w->format)) continue;
    if (packed.count(w->data) || !seen.insert(w->data).second) continue;
    todo.push_back(w);
  }
  return todo;
}
}  // namespace

void Linear::prepare(std::span<const Matrix* const> ws, const std::function<void(const Matrix&)>& done,
                     const std::function<void(const Matrix&)>& soon) {
  if (exact_) return;
  const std::vector<const Matrix*> todo = worth_packing(ws, packed_);
  std::vector<quant::PackedWeights> out(todo.size());
  std::vector<std::exception_ptr> errors(pool_.num_threads());
  std::atomic<std::size_t> next{0};
  pool_.run_on_all([&](std::size_t thread) {
    try {
      for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < todo.size();
           i = next.fetch_add(1, std::memory_order_relaxed)) {
        const std::size_t round = pool_.num_threads();
        if (i < round) soon(*todo[i]);  // the first round has no one before it
        if (i + round < todo.size()) soon(*todo[i + round]);
        const Matrix& w = *todo[i];
        out[i] = quant::pack_weights(w.format, w.data, w.n_out, w.n_in);
        done(w);
      }
    } catch (...) {
      errors[thread] = std::current_exception();
      next.store(todo.size(), std::memory_order_relaxed);  // the others stop too
    }
  });
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (std::size_t i = 0; i < todo.size(); ++i) packed_.emplace(todo[i]->data, std::move(out[i]));
}

void Linear::prepare_in_background(std::span<const Matrix* const> ws, std::function<void(const Matrix&)> done,
                                   const std::function<void(const Matrix&)>& soon, std::size_t max_pending_bytes) {
  if (exact_) return;
  std::vector<const Matrix*> now;
  std::vector<Matrix> later;
  for (const Matrix* w : worth_packing(ws, packed_)) {
    if (quant::has_packed_arithmetic_on_file_layout(w->format) && !as_packed_.count(w->data)) {
      later.push_back(*w);
      as_packed_.emplace(w->data, *w);
    } else if (!as_packed_.count(w->data)) {
      now.push_back(w);
    }
  }
  prepare(now, done, soon);
  if (later.empty()) return;
  background_done_ = std::move(done);
  background_ = std::make_unique<BackgroundPacker>(std::move(later), max_pending_bytes, soon);
}

void Linear::adopt_packed() {
  if (!background_) return;
  for (BackgroundPacker::Packed& p : background_->take()) {
    as_packed_.erase(p.matrix.data);
    packed_.emplace(p.matrix.data, std::move(p.weights));
    background_done_(p.matrix);
  }
  if (background_->finished()) background_.reset();
}

void Linear::finish_background() {
  while (background_) {
    background_->pause(false);
    background_->wait_ready(1);
    adopt_packed();
  }
}

const quant::PackedWeights* Linear::packed(const Matrix& w) const {
  if (packed_.empty()) return nullptr;
  const auto it = packed_.find(w.data);
  if (it == packed_.end() || it->second.n_out() != w.n_out || it->second.n_in() != w.n_in) return nullptr;
  return &it->second;
}

void Linear::multiply(const Matrix& w, const quant::QuantizedActivations& x, float* y) {
  if (const quant::PackedWeights* p = packed(w)) return quant::matmul(*p, x, y, pool_);
  if (!as_packed_.empty()) {
    const auto it = as_packed_.find(w.data);
    if (it != as_packed_.end() && it->second.n_out == w.n_out && it->second.n_in == w.n_in) {
      return quant::matmul_as_packed(w.format, w.data, w.n_out, w.n_in, x, y, pool_);
    }
  }
  quant::matmul(w.format, w.data, w.n_out, w.n_in, x, y, pool_);
}

const quant::QuantizedActivations& Linear::convert(quant::QuantFormat format, const float* x, std::size_t n_rows,
                                                   std::size_t n_cols, std::size_t slot) {
  quant::quantize_activations(format, x, n_rows, n_cols, converted_[slot], &pool_);
  return converted_[slot];
}

void Linear::apply(const Matrix& w, const float* x, std::size_t n_rows, float* y) {
  if (exact_ && is_quantized(w.format)) return apply_exact(w, x, n_rows, y);
  const auto& acts = convert(quant::kernel_activation_format(w.format), x, n_rows, w.n_in, 0);
  multiply(w, acts, y);
}

void Linear::apply_shared(std::initializer_list<std::pair<const Matrix*, float*>> outputs, const float* x,
                          std::size_t n_rows) {
  // Convert once per distinct activation format (at most one per slot).
  std::array<quant::QuantFormat, 4> formats{};
  std::size_t n_formats = 0;
  for (const auto& [w, y] : outputs) {
    if (exact_ && is_quantized(w->format)) {
      apply_exact(*w, x, n_rows, y);
      continue;
    }
    const quant::QuantFormat f = quant::kernel_activation_format(w->format);
    std::size_t slot = 0;
    while (slot < n_formats && formats[slot] != f) ++slot;
    if (slot == n_formats) {
      formats[n_formats++] = f;
      convert(f, x, n_rows, w->n_in, slot);
    }
    multiply(*w, converted_[slot], y);
  }
}

}  // namespace lamina::model::cpu
