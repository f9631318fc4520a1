// Matmul of the packed weight layouts, compiled once per target: the SIMD
// kernel where the target has one (AVX3_DL with GFNI), the scalar one else.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul_packed.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "packed_layout.h"
#include "simd_dot_packed_avx3dl-inl.h"
#include "simd_dot_packed_kquants_avx3dl-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

bool PackedSimdKernel(QuantFormat format) {
#if HWY_TARGET == HWY_AVX3_DL
  return detail::packed_block_bytes(format) != 0 && dl::CpuHasGfni();
#else
  (void)format;
  return false;
#endif
}

#if HWY_TARGET == HWY_AVX3_DL
// Groups [begin, end) against every activation row, 4 rows at a time.
template <class Kernel>
void SimdGroups(const detail::PackedView& w, const QuantizedActivations& x, float* y, size_t begin, size_t end) {
  constexpr size_t kTile = 4;
  detail::ActivationRow rows[kTile] = {};
  float* out[kTile] = {};
  for (size_t g = begin; g < end; ++g) {
    for (size_t r = 0; r < x.rows(); r += kTile) {
      const size_t tile = x.rows() - r < kTile ? x.rows() - r : kTile;
      for (size_t t = 0; t < tile; ++t) {
        rows[t] = detail::ActivationsAccess::row(x, r + t);
        out[t] = y + (r + t) * w.n_out;
      }
      switch (tile) {
        case 4: dl::packed::DotGroup<Kernel, 4>(w, g, rows, out); break;
        case 3: dl::packed::DotGroup<Kernel, 3>(w, g, rows, out); break;
        case 2: dl::packed::DotGroup<Kernel, 2>(w, g, rows, out); break;
        default: dl::packed::DotGroup<Kernel, 1>(w, g, rows, out); break;
      }
    }
  }
}
#endif

void Groups(const detail::PackedView& w, const QuantizedActivations& x, float* y, size_t begin, size_t end) {
#if HWY_TARGET == HWY_AVX3_DL
  if (PackedSimdKernel(w.format)) {
    switch (w.format) {
      case QuantFormat::Q2_K: return SimdGroups<dl::packed::PackedKernelQ2_K>(w, x, y, begin, end);
      case QuantFormat::Q3_K: return SimdGroups<dl::packed::PackedKernelQ3_K>(w, x, y, begin, end);
      case QuantFormat::Q4_0: return SimdGroups<dl::packed::PackedKernelQ4_0>(w, x, y, begin, end);
      case QuantFormat::Q8_0: return SimdGroups<dl::packed::PackedKernelQ8_0>(w, x, y, begin, end);
      case QuantFormat::Q4_K: return SimdGroups<dl::packed::PackedKernelQ4_K>(w, x, y, begin, end);
      case QuantFormat::Q5_K: return SimdGroups<dl::packed::PackedKernelQ5_K>(w, x, y, begin, end);
      default: return SimdGroups<dl::packed::PackedKernelIQ4_XS>(w, x, y, begin, end);
    }
  }
#endif
  for (size_t g = begin; g < end; ++g) {
    for (size_t r = 0; r < x.rows(); ++r) {
      detail::dot_packed_group_scalar(w, g, detail::ActivationsAccess::row(x, r), y + r * w.n_out);
    }
  }
}

void MatMulPacked(const detail::PackedView& w, const QuantizedActivations& x, float* y, ThreadPool& pool) {
  const auto groups = [&](size_t begin, size_t end) { Groups(w, x, y, begin, end); };
  // As the unpacked kernels split their rows: contiguous shares when
  // streaming the weights once, ranges taken in turn when compute bound.
  if (x.rows() == 1) {
    pool.parallel_for(w.groups(), 1, groups);
  } else {
    pool.parallel_for_dynamic(w.groups(), 1, groups);
  }
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lamina::quant {
HWY_EXPORT(PackedSimdKernel);
HWY_EXPORT(MatMulPacked);

bool detail::packed_simd_kernel(QuantFormat format) { return HWY_DYNAMIC_DISPATCH(PackedSimdKernel)(format); }

void detail::matmul_packed(const PackedView& w, const QuantizedActivations& x, float* y, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatMulPacked)(w, x, y, pool);
}
}  // namespace lamina::quant
#endif  // HWY_ONCE
