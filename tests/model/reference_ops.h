// The operations of the reference forward pass, one function each, in double.
// Slow and obvious on purpose.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "reference_model.h"

namespace lamina::model::reference {

using Activations = std::vector<double>;

// x / sqrt(mean(x^2) + eps) * w
Activations rms_norm(std::span<const double> x, const Vector& w, double eps);
// (x - mean) / sqrt(var + eps) * w + b
Activations layer_norm(std::span<const double> x, const Vector& w, const Vector& b, double eps);

// y = W x (+ bias if not empty). With `ggml_activations`, x is first rounded
// to f32 and through the activation format ggml dots W's format with (Q8_0
// for Q8_0/Q5_0/Q4_0, Q8_K for K-quants, F16 for F16, nothing for F32), as
// llama.cpp's CPU backend does.
Activations matvec(const Matrix& w, std::span<const double> x, bool ggml_activations,
                   const Vector& bias = {});

// Rotates one head in place at position `pos` (times any linear scaling). The first n_rot values are
// rotated in pairs with angle pos * base^(-2i/n_rot) / factor[i] (factors
// empty: all 1). NORM pairs (2i, 2i+1); NEOX pairs (i, i + n_rot/2).
void rope_norm(std::span<double> head, double pos, size_t n_rot, double base, const Vector& factors);
void rope_neox(std::span<double> head, double pos, size_t n_rot, double base, const Vector& factors);

double silu(double x);
// tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
double gelu_tanh(double x);
// ggml's CPU GELU: x rounded to f16, GELU evaluated in f32 for that value and
// rounded to f16 (a lookup table there); x <= -10 gives 0, x >= 10 gives x.
double gelu_ggml_f16(double x);

// cap * tanh(x / cap)
double softcap(double x, double cap);

// In place, numerically stable.
void softmax(std::span<double> x);

}  // namespace lamina::model::reference
