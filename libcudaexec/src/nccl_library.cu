#include "nccl_library.h"

#include <dlfcn.h>

#include <mutex>

#include "lamina/cudaexec/device.h"

namespace lamina::cudaexec::detail {
namespace {

constexpr const char* kLibrary = "libnccl.so.2";

template <typename F>
void bind(void* handle, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) throw CudaError(std::string(kLibrary) + " has no " + name + " (NCCL 2.x is needed)");
}

NcclLibrary load() {
  // Never closed: communicators may live until the process ends.
  void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw CudaError(std::string("tensor parallelism needs NCCL, which did not load (") + dlerror() +
                    "): install it (the CUDA toolkit's or a libnccl2 package) where the loader finds it");
  NcclLibrary l;
  bind(handle, "ncclCommInitAll", l.comm_init_all);
  bind(handle, "ncclCommDestroy", l.comm_destroy);
  bind(handle, "ncclAllGather", l.all_gather);
  bind(handle, "ncclGetErrorString", l.error_string);
  bind(handle, "ncclGetVersion", l.version);
  return l;
}

}  // namespace

const NcclLibrary& nccl() {
  // A failed load is retried on the next call (the error is not cached).
  static std::mutex mutex;
  static NcclLibrary library;
  const std::lock_guard lock(mutex);
  if (!library.comm_init_all) library = load();
  return library;
}

void nccl_check(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return;
  throw CudaError(std::string("NCCL: ") + what + " failed: " + nccl().error_string(result));
}

}  // namespace lamina::cudaexec::detail
