// Portable IEEE half (f16) and bfloat16 conversions, bit-exact with ggml.
#pragma once

#include <bit>
#include <cstdint>

namespace lamina::quant {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) {  // inf or nan; keep the payload
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  }
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in f32.
    const float magnitude = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Round to nearest, ties to even; overflow gives inf, nan stays nan (quiet).
inline uint16_t f32_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // nan: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520 -> inf (also inf itself)
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // below 2^-14: f16 subnormal or zero
    // Adding 0.5 makes the FPU round the value to a multiple of 2^-24
    // (RNE); the low mantissa bits then hold the f16 subnormal code.
    const float rounded = std::bit_cast<float>(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(rounded) - 0x3f000000u));
  }
  // Normal: rebias the exponent and round the 13 dropped bits to even.
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xfffu + odd - (112u << 23);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

inline float bf16_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// Round to nearest, ties to even; nan is kept and made quiet.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  }
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// Half the E8M0 scale e of an MXFP4 block: 2^(e - 128), exact in f32 for
// every byte (e = 0 and 1 are f32 subnormals).
inline float e8m0_to_f32_half(uint8_t e) {
  return e < 2 ? std::bit_cast<float>(0x00200000u << e) : std::bit_cast<float>(static_cast<uint32_t>(e - 1) << 23);
}

}  // namespace lamina::quant
