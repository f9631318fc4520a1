// Matrix products of the forward pass, through libquant's kernels.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "background_packer.h"
#include "lamina/model/weights.h"
#include "lamina/quant/activations.h"
#include "lamina/quant/packed.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::model::cpu {

// y[r][o] = sum_i W[o][i] * x[r][i] for the n_rows rows of x (row stride
// w.n_in) into y (row stride w.n_out). Activations are converted to the
// weight's activation format as llama.cpp does, so quantized models match it.
class Linear {
 public:
  // exact: quantized weights meet f32 activations (dequantized row by row)
  // instead of activations quantized like llama.cpp's CPU backend. Slower;
  // it matches backends that keep activations in floating point.
  Linear(quant::ThreadPool& pool, bool exact);

  // Packs each of `ws` whose format has a packed layout that this CPU runs
  // faster (unless the products are exact) for the later products with it,
  // and calls done(w) for each packed one as soon as it is (w's own bytes
  // are no longer read then). Whole matrices go to the pool's threads, which
  // take them from a shared counter: no wait between matrices, and one
  // thread's page faults on the file overlap another's packing. A thread
  // that starts a matrix calls soon(w) for the one that comes a round of
  // threads later (and in the first round for its own), so that reading
  // the file runs ahead of the packing.
  void prepare(std::span<const Matrix* const> ws, const std::function<void(const Matrix&)>& done,
               const std::function<void(const Matrix&)>& soon);

  // As prepare, except for the matrices that quant::matmul_as_packed takes:
  // those stay on the file's layout, multiplied with the packed kernels'
  // arithmetic (the same bits), while a thread of their own packs them
  // (BackgroundPacker, holding at most max_pending_bytes of copies not yet
  // swapped in). adopt_packed() swaps the finished copies in and calls
  // done(w) for each; so outputs never depend on when that happens.
  void prepare_in_background(std::span<const Matrix* const> ws, std::function<void(const Matrix&)> done,
                             const std::function<void(const Matrix&)>& soon, std::size_t max_pending_bytes);
  // Swaps in the copies the background packing has finished. Call it
  // between steps only (never while a product runs).
  void adopt_packed();
  // Waits for the background packing to finish, swapping the copies in as
  // they come (between steps only, as adopt_packed).
  void finish_background();
  // Holds the background packing (after the matrix in hand) or lets it go
  // on; nothing without one.
  void pause_background(bool paused) {
    if (background_) background_->pause(paused);
  }
  // The background packing, if any is still running (tests).
  BackgroundPacker* background() { return background_.get(); }

  void apply(const Matrix& w, const float* x, std::size_t n_rows, float* y);
  // The same for several matrices sharing one input (Q, K and V; gate and
  // up): the input is converted once per activation format.
  void apply_shared(std::initializer_list<std::pair<const Matrix*, float*>> outputs, const float* x,
                    std::size_t n_rows);

 private:
  // The input converted to `format`, in a buffer kept between calls (no
  // allocation once the largest batch has been seen).
  const quant::QuantizedActivations& convert(quant::QuantFormat format, const float* x, std::size_t n_rows,
                                             std::size_t n_cols, std::size_t slot);

  void apply_exact(const Matrix& w, const float* x, std::size_t n_rows, float* y);
  // w's packed copy, if prepare() made one.
  const quant::PackedWeights* packed(const Matrix& w) const;
  void multiply(const Matrix& w, const quant::QuantizedActivations& x, float* y);

  quant::ThreadPool& pool_;
  bool exact_;
  std::array<quant::QuantizedActivations, 4> converted_;
  std::vector<std::vector<float>> row_scratch_;  // per thread, for apply_exact
  std::unordered_map<const std::byte*, quant::PackedWeights> packed_;  // by the matrix's data
  // Matrices waiting for the background packing, by their data.
  std::unordered_map<const std::byte*, Matrix> as_packed_;
  std::unique_ptr<BackgroundPacker> background_;
  std::function<void(const Matrix&)> background_done_;
};

}  // namespace lamina::model::cpu
