#include "scale_search.h"

#include <algorithm>
#include <cmath>

#include "reference_rows.h"

namespace lamina::quant::ref {
namespace {

// Below this a block counts as all zero.
constexpr float kGroupMaxEps = 1e-15f;

float weighted_error(int n, const float* x, const float* weights, const uint8_t* L, float scale,
                     float min, bool use_abs_error) {
  float error = 0.0f;
  for (int i = 0; i < n; ++i) {
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_abs_error ? std::fabs(diff) : diff * diff;
    error += weights[i] * diff;
  }
  return error;
}

// The value of largest magnitude (first on ties), sign kept; amax its size.
float signed_absmax(int n, const float* x, float& amax) {
  float max = 0.0f;
  amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

int clamp_level(int l, int nmax) { return std::clamp(l, -nmax, nmax - 1); }

}  // namespace

float search_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                           float& the_min, float rmin, float rdelta, int nstep, bool use_abs_error) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    the_min = -min;
    return 0.0f;
  }

  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
  }
  float best_error = weighted_error(n, x, weights, L, scale, min, use_abs_error);

  uint8_t trial[32];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float wl = weights[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    const float error = weighted_error(n, x, weights, trial, this_scale, this_min, use_abs_error);
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  the_min = -min;
  return scale;
}

float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  // Sums of w*x*l and w*l*l with w = x^2 for the grid iscale.
  auto fit = [&](float iscale, float& sumlx, float& suml2) {
    sumlx = 0.0f;
    suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(clamp_level(nearest_int(iscale * x[i]), nmax));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
  };
  auto assign = [&](float iscale) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nmax + clamp_level(nearest_int(iscale * x[i]), nmax));
    }
  };

  float iscale = static_cast<float>(-nmax) / max;
  float sumlx, suml2;
  fit(iscale, sumlx, suml2);
  assign(iscale);
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    fit(iscale, sumlx, suml2);
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      assign(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float refine_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_level(nearest_int(iscale * x[i]), nmax);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  // Coordinate descent: move one value to the level that is best for the
  // scale fitted to all the others; keep it if the whole fit improves
  // (sumlx^2 / suml2 grows).
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float old_l = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * old_l;
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - w * old_l * old_l;
      const int new_l = clamp_level(nearest_int(x[i] * sl2 / slx), nmax);
      if (new_l == L[i]) continue;
      slx += w * x[i] * static_cast<float>(new_l);
      sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace lamina::quant::ref
