// Matmul of the packed weight layouts, compiled once per target: the SIMD
// kernel where the target has one (AVX3_DL with GFNI), the scalar one else.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul_packed.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "packed_layout.h"
#include "simd_dot_packed_avx3dl-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

bool PackedSimdKernel(QuantFormat format) {
#if HWY_TARGET == HWY_AVX3_DL
  return format == QuantFormat::Q2_K && dl::CpuHasGfni();
#else
  (void)format;
  return false;
#endif
}

// Groups [begin, end) against every activation row.
void GroupsQ2_K(const detail::PackedView& w, const QuantizedActivations& x, float* y, size_t begin, size_t end) {
  const size_t n_rows = x.rows();
#if HWY_TARGET == HWY_AVX3_DL
  if (dl::CpuHasGfni()) {
    constexpr size_t kTile = 4;
    detail::ActivationRow rows[kTile] = {};
    float* out[kTile] = {};
    for (size_t g = begin; g < end; ++g) {
      size_t r = 0;
      for (; r < n_rows; r += kTile) {
        const size_t tile = n_rows - r < kTile ? n_rows - r : kTile;
        for (size_t t = 0; t < tile; ++t) {
          rows[t] = detail::ActivationsAccess::row(x, r + t);
          out[t] = y + (r + t) * w.n_out;
        }
        switch (tile) {
          case 4: dl::packed::DotGroupQ2_K<4>(w, g, rows, out); break;
          case 3: dl::packed::DotGroupQ2_K<3>(w, g, rows, out); break;
          case 2: dl::packed::DotGroupQ2_K<2>(w, g, rows, out); break;
          default: dl::packed::DotGroupQ2_K<1>(w, g, rows, out); break;
        }
      }
    }
    return;
  }
#endif
  for (size_t g = begin; g < end; ++g) {
    for (size_t r = 0; r < n_rows; ++r) {
      detail::dot_packed_q2_k_scalar(w, g, detail::ActivationsAccess::row(x, r), y + r * w.n_out);
    }
  }
}

void MatMulPackedQ2_K(const detail::PackedView& w, const QuantizedActivations& x, float* y, ThreadPool& pool) {
  const auto groups = [&](size_t begin, size_t end) { GroupsQ2_K(w, x, y, begin, end); };
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
HWY_EXPORT(MatMulPackedQ2_K);

bool detail::packed_simd_kernel(QuantFormat format) { return HWY_DYNAMIC_DISPATCH(PackedSimdKernel)(format); }

void detail::matmul_packed_q2_k(const PackedView& w, const QuantizedActivations& x, float* y, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatMulPackedQ2_K)(w, x, y, pool);
}
}  // namespace lamina::quant
#endif  // HWY_ONCE
