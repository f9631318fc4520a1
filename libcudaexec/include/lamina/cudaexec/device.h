// The CUDA devices visible to this process, and the error type of libcudaexec.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "lamina/cudaexec/export.h"

namespace lamina::cudaexec {

// Anything the GPU path cannot do: no device, out of device memory, a failed
// CUDA call (the message names the call and where), an unsupported format.
class LAMINA_CUDAEXEC_API CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LAMINA_CUDAEXEC_API DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::size_t total_bytes = 0;
  std::size_t free_bytes = 0;
  std::size_t l2_bytes = 0;
};

// Number of usable CUDA devices; 0 when there is no driver or no device
// (never throws).
LAMINA_CUDAEXEC_API int device_count();

// Facts about device `index`. Throws CudaError.
LAMINA_CUDAEXEC_API DeviceInfo device_info(int index);

}  // namespace lamina::cudaexec
