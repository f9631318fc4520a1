#include "reference_ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::model::reference {
namespace {

// x as ggml would see it after converting its f32 activations to
// `format` (the weight format's activation type) and back.
std::vector<double> through_activation_format(quant::QuantFormat format, std::span<const double> x) {
  std::vector<float> f(x.begin(), x.end());
  if (format != quant::QuantFormat::F32) {
    std::vector<std::byte> packed(quant::row_bytes(format, f.size()));
    quant::quantize_row_ref(format, f.data(), packed.data(), f.size());
    quant::dequantize_row_ref(format, packed.data(), f.data(), f.size());
  }
  return {f.begin(), f.end()};
}

}  // namespace

Activations rms_norm(std::span<const double> x, const Vector& w, double eps) {
  double sum_sq = 0.0;
  for (double v : x) sum_sq += v * v;
  const double scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
  Activations y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

Activations layer_norm(std::span<const double> x, const Vector& w, const Vector& b, double eps) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= n;
  double var = 0.0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n;
  const double scale = 1.0 / std::sqrt(var + eps);
  Activations y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * scale * w[i] + b[i];
  return y;
}

Activations matvec(const Matrix& w, std::span<const double> x, bool ggml_activations,
                   const Vector& bias) {
  if (x.size() != w.cols) throw std::logic_error("matvec: input length differs from the row length");
  const auto act_format = quant::format_traits(w.format).activation;
  const std::vector<double> xq = ggml_activations ? through_activation_format(act_format, x)
                                                  : std::vector<double>(x.begin(), x.end());
  Activations y(w.rows);
  for (size_t r = 0; r < w.rows; ++r) {
    const float* row = w.row(r);
    double sum = 0.0;
    for (size_t c = 0; c < w.cols; ++c) sum += static_cast<double>(row[c]) * xq[c];
    y[r] = bias.empty() ? sum : sum + bias[r];
  }
  return y;
}

namespace {

double rope_angle(double pos, size_t pair, size_t n_rot, double base, const Vector& factors) {
  const double inv_freq = std::pow(base, -2.0 * static_cast<double>(pair) / static_cast<double>(n_rot));
  const double factor = factors.empty() ? 1.0 : factors[pair];
  return pos * inv_freq / factor;
}

void rotate(double& a, double& b, double angle) {
  const double c = std::cos(angle);
  const double s = std::sin(angle);
  const double a0 = a;
  a = a0 * c - b * s;
  b = a0 * s + b * c;
}

}  // namespace

void rope_norm(std::span<double> head, double pos, size_t n_rot, double base, const Vector& factors) {
  for (size_t i = 0; i < n_rot / 2; ++i) {
    rotate(head[2 * i], head[2 * i + 1], rope_angle(pos, i, n_rot, base, factors));
  }
}

void rope_neox(std::span<double> head, double pos, size_t n_rot, double base, const Vector& factors) {
  for (size_t i = 0; i < n_rot / 2; ++i) {
    rotate(head[i], head[i + n_rot / 2], rope_angle(pos, i, n_rot, base, factors));
  }
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_ggml_f16(double x) {
  const float xf = static_cast<float>(x);
  if (xf <= -10.0f) return 0.0;
  if (xf >= 10.0f) return xf;
  const float h = quant::f16_to_f32(quant::f32_to_f16(xf));
  // ggml fills its table with this f32 expression, one entry per f16 value.
  const float k = 0.79788456080286535587989211986876f;
  const float g = 0.5f * h * (1.0f + std::tanh(k * h * (1.0f + 0.044715f * h * h)));
  return quant::f16_to_f32(quant::f32_to_f16(g));
}

double softcap(double x, double cap) { return cap * std::tanh(x / cap); }

void softmax(std::span<double> x) {
  const double max = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (double& v : x) {
    v = std::exp(v - max);
    sum += v;
  }
  for (double& v : x) v /= sum;
}

}  // namespace lamina::model::reference
