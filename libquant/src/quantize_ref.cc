// quantize_row_ref: picks the per-format reference quantizer.
#include <cstring>
#include <stdexcept>
#include <string>

#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"
#include "reference_rows.h"

namespace lamina::quant {

void quantize_row_ref(QuantFormat format, const float* src, void* dst, size_t n) {
  using namespace ref;
  const size_t nblocks = block_count(format, n);
  switch (format) {
    case QuantFormat::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case QuantFormat::F16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
      return;
    }
    case QuantFormat::BF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    }
    case QuantFormat::Q4_0: return quantize_q4_0(src, nblocks, static_cast<BlockQ4_0*>(dst));
    case QuantFormat::Q4_1: return quantize_q4_1(src, nblocks, static_cast<BlockQ4_1*>(dst));
    case QuantFormat::Q5_0: return quantize_q5_0(src, nblocks, static_cast<BlockQ5_0*>(dst));
    case QuantFormat::Q5_1: return quantize_q5_1(src, nblocks, static_cast<BlockQ5_1*>(dst));
    case QuantFormat::Q8_0: return quantize_q8_0(src, nblocks, static_cast<BlockQ8_0*>(dst));
    case QuantFormat::Q8_1: return quantize_q8_1(src, nblocks, static_cast<BlockQ8_1*>(dst));
    case QuantFormat::Q2_K: return quantize_q2_k(src, nblocks, static_cast<BlockQ2_K*>(dst));
    case QuantFormat::Q3_K: return quantize_q3_k(src, nblocks, static_cast<BlockQ3_K*>(dst));
    case QuantFormat::Q4_K: return quantize_q4_k(src, nblocks, static_cast<BlockQ4_K*>(dst));
    case QuantFormat::Q5_K: return quantize_q5_k(src, nblocks, static_cast<BlockQ5_K*>(dst));
    case QuantFormat::Q6_K: return quantize_q6_k(src, nblocks, static_cast<BlockQ6_K*>(dst));
    case QuantFormat::Q8_K: return quantize_q8_k(src, nblocks, static_cast<BlockQ8_K*>(dst));
    case QuantFormat::IQ4_NL: return quantize_iq4_nl(src, nblocks, static_cast<BlockIQ4_NL*>(dst));
    case QuantFormat::IQ4_XS: return quantize_iq4_xs(src, nblocks, static_cast<BlockIQ4_XS*>(dst));
    case QuantFormat::MXFP4: return quantize_mxfp4(src, nblocks, static_cast<BlockMXFP4*>(dst));
  }
  throw std::invalid_argument("quantize_row_ref: unknown format " +
                              std::to_string(static_cast<uint32_t>(format)));
}

}  // namespace lamina::quant
