// Owning device allocations (one cudaMalloc each, freed on destruction) and
// a bump allocator that places many tensors inside one of them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda_check.h"

namespace lamina::cudaexec::detail {

class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  // `what` names the allocation in the error when the device is out of memory.
  DeviceAllocation(std::size_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    const cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      std::size_t free_b = 0, total_b = 0;
      (void)cudaMemGetInfo(&free_b, &total_b);
      throw CudaError("out of GPU memory: " + what + " needs " + std::to_string(bytes >> 20) + " MiB, " +
                      std::to_string(free_b >> 20) + " MiB free of " + std::to_string(total_b >> 20) + " MiB (" +
                      cudaGetErrorString(err) + ")");
    }
  }
  ~DeviceAllocation() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  DeviceAllocation(DeviceAllocation&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceAllocation& operator=(DeviceAllocation&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Hands out aligned pieces of a region. Run once with base == nullptr to
// measure the size, then again over the real allocation.
class BumpLayout {
 public:
  explicit BumpLayout(void* base = nullptr) : base_(static_cast<std::byte*>(base)) {}
  template <typename T>
  T* take(std::size_t count) {
    offset_ = (offset_ + kAlign - 1) / kAlign * kAlign;
    T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return p;
  }
  std::size_t size() const { return offset_; }

 private:
  static constexpr std::size_t kAlign = 256;
  std::byte* base_;
  std::size_t offset_ = 0;
};

}  // namespace lamina::cudaexec::detail
