// Internal: the scale searches of the K-quant reference quantizers. Each
// fits one sub-block of n values; the arithmetic order follows ggml's so the
// results match its files byte for byte when built without FMA contraction.
#pragma once

#include <cstdint>

namespace lamina::quant::ref {

// Asymmetric fit x ~ scale * L - min with L in [0, nmax] and min >= 0 (the
// block minimum is clamped to <= 0 first). Starts from the min/max grid, then
// tries nstep + 1 grid widths (nmax + rmin + rdelta * step) and, for each,
// the weighted least-squares scale and min; keeps the lowest weighted error
// (absolute if use_abs_error, else squared). Writes L and min, returns scale.
float search_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                           float& min, float rmin, float rdelta, int nstep, bool use_abs_error);

// Symmetric fit x ~ scale * (L - nmax), L - nmax in [-nmax, nmax - 1],
// weighted by x^2: tries 19 grid widths around nmax (step 0.1) and keeps the
// best least-squares scale. Writes L (offset by nmax), returns the scale
// (0 for an all-zero block).
float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L);

// Symmetric fit as above, starting from the plain grid and then moving single
// values to a better level while the weighted x^2 fit improves (at most 5
// sweeps). Writes L (offset by nmax), returns the scale.
float refine_symmetric_scale(int n, int nmax, const float* x, int8_t* L);

}  // namespace lamina::quant::ref
