// One-row products of the 32-value block formats (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, IQ4_NL, MXFP4) with Q8_0/Q8_1 activations: matvec_q32_kernel over each
// format's description in weight_formats.cuh.
#include "matvec_quant.cuh"

namespace lamina::cudaexec::detail {

bool launch_matmul_q32(const MatmulArgs& args, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q4_0: launch_matvec_q32<FmtQ4_0>(args, stream); return true;
    case QuantFormat::Q4_1: launch_matvec_q32<FmtQ4_1>(args, stream); return true;
    case QuantFormat::Q5_0: launch_matvec_q32<FmtQ5_0>(args, stream); return true;
    case QuantFormat::Q5_1: launch_matvec_q32<FmtQ5_1>(args, stream); return true;
    case QuantFormat::Q8_0: launch_matvec_q32<FmtQ8_0>(args, stream); return true;
    case QuantFormat::IQ4_NL: launch_matvec_q32<FmtIQ4_NL>(args, stream); return true;
    case QuantFormat::MXFP4: launch_matvec_q32<FmtMXFP4>(args, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail
