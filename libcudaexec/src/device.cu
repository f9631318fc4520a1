#include "lamina/cudaexec/device.h"

#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

#include "cuda_check.h"
#include "launch.cuh"

namespace lamina::cudaexec {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver/device" error
    return 0;
  }
  return n;
}

DeviceInfo device_info(int index) {
  const int n = device_count();
  if (index < 0 || index >= n)
    throw CudaError("CUDA device " + std::to_string(index) + " does not exist (" + std::to_string(n) +
                    " device(s) visible)");
  cudaDeviceProp prop{};
  LAMINA_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.total_bytes = prop.totalGlobalMem;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  int current = 0;
  LAMINA_CUDA_CHECK(cudaGetDevice(&current));
  LAMINA_CUDA_CHECK(cudaSetDevice(index));
  std::size_t free_b = 0, total_b = 0;
  LAMINA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  LAMINA_CUDA_CHECK(cudaSetDevice(current));
  info.free_bytes = free_b;
  return info;
}

}  // namespace lamina::cudaexec

namespace lamina::cudaexec::detail {

bool programmatic_launch_supported() {
  // Asked once per thread and device: launches are frequent, devices few.
  thread_local int cached_device = -1;
  thread_local bool cached_answer = false;
  int device = 0;
  LAMINA_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    int major = 0;
    LAMINA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    cached_answer = major >= 9;
    cached_device = device;
  }
  return cached_answer;
}

void allow_dynamic_smem(const void* kernel, std::size_t bytes) {
  int device = 0;
  LAMINA_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> done;
  const std::lock_guard lock(mutex);
  if (done.count({kernel, device})) return;
  LAMINA_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  done.insert({kernel, device});
}

}  // namespace lamina::cudaexec::detail
