// Element-wise and per-row operations of the forward pass (everything but the
// matrix products and attention). Rows are short next to the weights, so these
// stay plain loops that the compiler vectorizes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "lamina/model/architecture.h"
#include "lamina/model/config.h"

namespace lamina::model::cpu {

// Allocates without value-initializing: a workspace sized for the largest
// batch or context then costs memory (resident pages) only where a step
// actually writes, e.g. 64 of 512 batch rows. Every element is written
// before it is read.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Workspace = std::vector<float, UninitializedAllocator<float>>;

// out = x / sqrt(mean(x^2) + eps) * w, the scale in double: activations are
// quantized right after a norm, and the closer to exact the fewer Q8
// roundings flip against other engines.
inline void rms_norm(const float* x, const float* w, float eps, std::size_t n, float* out) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const double scale = 1.0 / std::sqrt(sum / static_cast<double>(n) + eps);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * scale * w[i]);
}

// out = (x - mean) / sqrt(var + eps) * w + b   (b may be null)
inline void layer_norm(const float* x, const float* w, const float* b, float eps, std::size_t n, float* out) {
  double mean = 0.0;
  for (std::size_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  double var = 0.0;
  for (std::size_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  const double scale = 1.0 / std::sqrt(var + eps);
  for (std::size_t i = 0; i < n; ++i) {
    const float y = static_cast<float>((x[i] - mean) * scale) * w[i];
    out[i] = b ? y + b[i] : y;
  }
}

inline void add_in_place(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

// Activations are evaluated in double and rounded once: their results are
// quantized next, and the correctly rounded value flips the fewest Q8
// roundings against other engines. (SiLU: silu_mul in vector_kernels.h.)
inline float gelu_tanh(float x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * v * (1.0 + 0.044715 * v * v))));
}

// GELU as llama.cpp's CPU backend computes it: the input rounded to f16 and
// looked up in a table of f16 results (exact beyond |x| >= 10). Used with the
// llama.cpp-compatible activation numerics.
float gelu_f16_table(float x);
// That table: 65536 f16 results indexed by the f16 bits of the input (valid
// for -10 < x < 10; beyond, GELU is 0 or x).
const uint16_t* gelu_f16_table_data();

// gpt-oss's expert activation: the gate capped at 7, the up projection
// clamped to +-7 and shifted by 1 (both constants are the model's, not the
// file's: GGUF and config.json give them no keys llama.cpp reads).
inline float swiglu_oai(float gate, float up) {
  constexpr double kAlpha = 1.702;
  constexpr double kLimit = 7.0;
  const double g = std::min<double>(gate, kLimit);
  const double u = std::clamp<double>(up, -kLimit, kLimit);
  return static_cast<float>(g / (1.0 + std::exp(-kAlpha * g)) * (u + 1.0));
}

inline float softcap(float x, float cap) { return static_cast<float>(cap * std::tanh(double{x} / cap)); }

// Rotary embedding of one head in place, given the cos/sin of each rotated
// pair for this position (n_dims / 2 entries).
inline void rope_head(float* v, RopeKind kind, std::size_t n_dims, const double* cos_t, const double* sin_t) {
  const std::size_t half = n_dims / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const std::size_t a = kind == RopeKind::Norm ? 2 * i : i;
    const std::size_t b = kind == RopeKind::Norm ? 2 * i + 1 : i + half;
    const double x0 = v[a], x1 = v[b];
    v[a] = static_cast<float>(x0 * cos_t[i] - x1 * sin_t[i]);
    v[b] = static_cast<float>(x0 * sin_t[i] + x1 * cos_t[i]);
  }
}

}  // namespace lamina::model::cpu
