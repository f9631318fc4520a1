// Public matmul entry points: argument checks, then the family's
// dynamically dispatched kernel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {
int64_t CompiledTarget() { return HWY_TARGET; }
}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <stdexcept>
#include <string>

#include "lamina/quant/kernels.h"
#include "matmul_families.h"

namespace lamina::quant {
HWY_EXPORT(CompiledTarget);

namespace {

enum class Family { kFloat, kBlocks32, kSuperBlocks };

Family family_of(QuantFormat format) {
  switch (format) {
    case QuantFormat::F32:
    case QuantFormat::F16:
    case QuantFormat::BF16: return Family::kFloat;
    case QuantFormat::Q4_0:
    case QuantFormat::Q4_1:
    case QuantFormat::Q5_0:
    case QuantFormat::Q5_1:
    case QuantFormat::Q8_0:
    case QuantFormat::IQ4_NL:
    case QuantFormat::MXFP4: return Family::kBlocks32;
    case QuantFormat::Q2_K:
    case QuantFormat::Q3_K:
    case QuantFormat::Q4_K:
    case QuantFormat::Q5_K:
    case QuantFormat::Q6_K:
    case QuantFormat::IQ4_XS: return Family::kSuperBlocks;
    default:
      throw std::invalid_argument("matmul: " + std::string(format_traits(format).name) +
                                  " is not a weight format");
  }
}

void check_row_length(QuantFormat format, size_t n_in) {
  const size_t block = format_traits(format).block_elems;
  if (n_in == 0 || n_in % block != 0) {
    throw std::invalid_argument("matmul: row length " + std::to_string(n_in) + " of " +
                                std::string(format_traits(format).name) +
                                " weights is not a positive multiple of " + std::to_string(block));
  }
}

}  // namespace

QuantFormat kernel_activation_format(QuantFormat weight_format) {
  return family_of(weight_format) == Family::kFloat ? QuantFormat::F32
                                                    : format_traits(weight_format).activation;
}

void matmul(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in,
            const QuantizedActivations& x, float* y, ThreadPool& pool) {
  const Family family = family_of(weight_format);
  check_row_length(weight_format, n_in);
  const QuantFormat expected = kernel_activation_format(weight_format);
  if (x.format() != expected || x.cols() != n_in) {
    throw std::invalid_argument(
        "matmul: " + std::string(format_traits(weight_format).name) + " weights with " +
        std::to_string(n_in) + " columns need " + std::string(format_traits(expected).name) +
        " activations of that length, got " + std::string(format_traits(x.format()).name) +
        " with " + std::to_string(x.cols()));
  }
  if (n_out == 0 || x.rows() == 0) return;
  switch (family) {
    case Family::kFloat:
      return detail::matmul_float(weight_format, w, n_out, n_in,
                                  static_cast<const float*>(x.row_blocks(0)),
                                  x.row_stride() / sizeof(float), x.rows(), y, pool);
    case Family::kBlocks32: return detail::matmul_q32(weight_format, w, n_out, n_in, x, y, pool);
    case Family::kSuperBlocks:
      return detail::matmul_kquants(weight_format, w, n_out, n_in, x, y, pool);
  }
}

void matmul(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in, const float* x,
            size_t n_rows, float* y, ThreadPool& pool) {
  if (family_of(weight_format) == Family::kFloat) {
    check_row_length(weight_format, n_in);
    if (n_out == 0 || n_rows == 0) return;
    return detail::matmul_float(weight_format, w, n_out, n_in, x, n_in, n_rows, y, pool);
  }
  // Reused across calls so that a decode loop does not allocate.
  thread_local QuantizedActivations scratch;
  quantize_activations(kernel_activation_format(weight_format), x, n_rows, n_in, scratch,
                       n_rows > 1 ? &pool : nullptr);
  matmul(weight_format, w, n_out, n_in, scratch, y, pool);
}

const char* kernel_target_name() {
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CompiledTarget)());
}

}  // namespace lamina::quant
#endif  // HWY_ONCE
