// Kernel launches with programmatic dependent launch (PDL, compute
// capability 9.0 and later): the next kernel of the stream is launched while
// the current one still runs, so its block scheduling and prologue (weight
// prefetches) overlap the current kernel instead of following it. Works in
// eager streams and inside graph capture alike.
//
// The contract every kernel launched through launch_kernel keeps: it calls
// wait_for_prior_kernels() before its first access to memory that an earlier
// kernel of the stream writes or reads (inputs, and outputs an earlier kernel
// may still read). That wait returns only once the previous kernel has
// completed and its writes are visible, so results are those of plain
// serialized launches, bit for bit. release_next_kernel() lets the next kernel
// start launching; placing it early only costs the next kernel's blocks some
// idle residency. On older devices the attribute is left off and both calls
// compile to nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "cuda_check.h"

namespace lamina::cudaexec::detail {

// Whether the current device takes programmatic dependent launches.
bool programmatic_launch_supported();

// Lets `kernel` use `bytes` of dynamic shared memory (above the default
// 48 KiB) on the current device: the limit is per device, so it is set once
// for each device a process launches the kernel on.
void allow_dynamic_smem(const void* kernel, std::size_t bytes);

template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes, cudaStream_t stream,
                   Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  // The legacy default stream (null) keeps plain launches: it synchronizes
  // with every other stream, and the tests' one-off checks run there.
  config.numAttrs = stream != nullptr && programmatic_launch_supported() ? 1 : 0;
  LAMINA_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// Blocks until the kernels launched before this one on the stream have
// completed and their memory operations are visible.
__device__ __forceinline__ void wait_for_prior_kernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Allows the next kernel of the stream to be launched (it still waits for
// this one's completion before touching shared data).
__device__ __forceinline__ void release_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Both, at the top of a kernel with nothing to do before its inputs exist.
__device__ __forceinline__ void enter_dependent_kernel() {
  wait_for_prior_kernels();
  release_next_kernel();
}

}  // namespace lamina::cudaexec::detail
