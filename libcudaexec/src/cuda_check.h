// Turns a failed CUDA runtime call into a CudaError naming the call, file and line.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "lamina/cudaexec/device.h"

namespace lamina::cudaexec::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  throw CudaError(std::string("CUDA error: ") + what + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace lamina::cudaexec::detail

#define LAMINA_CUDA_CHECK(call)                                                                 \
  do {                                                                                          \
    const cudaError_t lamina_cuda_err_ = (call);                                                \
    if (lamina_cuda_err_ != cudaSuccess)                                                        \
      ::lamina::cudaexec::detail::throw_cuda_error(lamina_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: reports launch-configuration errors at once.
#define LAMINA_CUDA_CHECK_LAUNCH() LAMINA_CUDA_CHECK(cudaGetLastError())
