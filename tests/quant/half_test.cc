// f16/bf16 conversions: exhaustive round trips, and rounding checked against
// an independent double-precision model of round-to-nearest-even.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "lamina/quant/half.h"

namespace lamina::quant {
namespace {

// The f16 value of a code, computed from the IEEE definition in double.
double f16_value(uint16_t h) {
  const int sign = h >> 15;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0x1f) {
    v = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else {
    v = std::ldexp(mant + 1024, exp - 25);
  }
  return sign ? -v : v;
}

// Round-to-nearest-even f32 -> f16 in double arithmetic (finite inputs).
uint16_t f16_model(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  int e = a == 0.0 ? -14 : std::ilogb(a);
  if (e < -14) e = -14;
  const double ulp = std::ldexp(1.0, e - 10);
  const double m = std::nearbyint(a / ulp);  // exact division; default mode is RNE
  const double v = m * ulp;
  if (v < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(v / std::ldexp(1.0, -24));
  const int ev = std::ilogb(v);
  const int mant = static_cast<int>(v / std::ldexp(1.0, ev - 10)) - 1024;
  return sign | static_cast<uint16_t>(((ev + 15) << 10) | mant);
}

TEST(Half, F16ToF32MatchesDefinitionForAllCodes) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const double expected = f16_value(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), expected) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Half, F16RoundTripsAllCodes) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t code = static_cast<uint16_t>(h);
    const uint16_t back = f32_to_f16(f16_to_f32(code));
    if ((code & 0x7c00) == 0x7c00 && (code & 0x3ff) != 0) {
      // nan stays nan with its sign, made quiet.
      EXPECT_EQ(back & 0x7c00, 0x7c00) << h;
      EXPECT_NE(back & 0x0200, 0) << h;
      EXPECT_EQ(back & 0x8000, code & 0x8000) << h;
    } else {
      EXPECT_EQ(back, code) << h;
    }
  }
}

// Every midpoint between neighbouring finite f16 values rounds to the even
// one, and the f32 values just beside it round to the nearer one.
TEST(Half, F16RoundsMidpointsToEven) {
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    const float lo = f16_to_f32(h);
    const float hi = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2) << "midpoint not exact";
    const uint16_t even = (h & 1) == 0 ? h : static_cast<uint16_t>(h + 1);
    EXPECT_EQ(f32_to_f16(mid), even) << h;
    EXPECT_EQ(f32_to_f16(-mid), even | 0x8000) << h;
    EXPECT_EQ(f32_to_f16(std::nextafter(mid, 0.0f)), h) << h;
    EXPECT_EQ(f32_to_f16(std::nextafter(mid, 1e9f)), h + 1) << h;
  }
}

TEST(Half, F16MatchesModelOnRandomFloats) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 1'000'000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (!std::isfinite(f)) continue;
    ASSERT_EQ(f32_to_f16(f), f16_model(f)) << std::bit_cast<uint32_t>(f);
  }
  // Values near the f16 range, where the random patterns are sparse.
  std::uniform_real_distribution<float> exponent(-30.0f, 17.0f);
  for (int i = 0; i < 200'000; ++i) {
    const float f = std::exp2(exponent(rng)) * ((i & 1) ? -1.0f : 1.0f);
    ASSERT_EQ(f32_to_f16(f), f16_model(f)) << f;
  }
}

TEST(Half, F16SpecialValues) {
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // the tie rounds up to inf
  EXPECT_EQ(f32_to_f16(1e30f), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);   // tie to even: 0
  EXPECT_EQ(f32_to_f16(0x1.8p-24f), 0x0002); // tie to even: 2
  EXPECT_EQ(f32_to_f16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1p-14f), 0x0400);   // smallest normal
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  const uint16_t snan = f32_to_f16(std::bit_cast<float>(0x7f800001u));
  EXPECT_NE(snan & 0x3ff, 0);  // a payload lost in the shift still gives nan
}

TEST(Half, Bf16RoundTripsAllCodes) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const uint16_t code = static_cast<uint16_t>(b);
    const float f = bf16_to_f32(code);
    EXPECT_EQ(std::bit_cast<uint32_t>(f), static_cast<uint32_t>(code) << 16);
    const uint16_t back = f32_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(back))) << b;
      EXPECT_NE(back & 0x0040, 0) << b;  // quiet
    } else {
      EXPECT_EQ(back, code) << b;
    }
  }
}

TEST(Half, Bf16RoundsToNearestEven) {
  std::mt19937 rng(99);
  for (int i = 0; i < 1'000'000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (!std::isfinite(f)) continue;
    const uint16_t r = f32_to_bf16(f);
    const uint32_t low = bits & 0xffff;
    const uint16_t truncated = static_cast<uint16_t>(bits >> 16);
    const bool up = low > 0x8000 || (low == 0x8000 && (truncated & 1));
    ASSERT_EQ(r, static_cast<uint16_t>(truncated + (up ? 1 : 0))) << bits;
  }
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even down
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, even up
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // snan -> quiet
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0xffc00000u)), 0xffc0);
}

}  // namespace
}  // namespace lamina::quant
