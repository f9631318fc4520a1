// NCCL, loaded when tensor parallelism is asked for: one-GPU users need no
// NCCL installed (the library ships apart from the CUDA runtime, which
// libcudaexec links statically), and a missing one is a clear error.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

namespace lamina::cudaexec::detail {

struct NcclLibrary {
  decltype(&::ncclCommInitAll) comm_init_all = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  decltype(&::ncclGetVersion) version = nullptr;
};

// The process's NCCL (libnccl.so.2 through the dynamic loader's search
// path), loaded once. Throws CudaError naming the library and the loader's
// message when it cannot be loaded or lacks a function.
const NcclLibrary& nccl();

// Throws CudaError naming `what` when `result` is not ncclSuccess.
void nccl_check(ncclResult_t result, const char* what);

}  // namespace lamina::cudaexec::detail
