// The contract between libmodel and a backend module: a shared object that
// libmodel loads at run time with dlopen (the CUDA forward pass,
// lamina-model-cuda.so), so that liblamina-model.so itself links no GPU code
// and CPU-only and GPU installs share it.
//
// A module exports one C symbol, kEntrySymbol, returning an Entry. libmodel
// reads the Entry's first members (abi, version, layout) before anything
// else and refuses a module whose values differ from its own: the rest is
// C++ (std::string, std::unique_ptr<Forward>, libmodel's structs), valid only
// between builds of the same sources by the same compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lamina/model/gpu_forward.h"

namespace lamina::model::backend {

// Raised whenever a struct or function type of this header changes, or
// Forward's virtual functions (a module's vtable) do.
inline constexpr uint32_t kAbi = 2;

// The layouts of libmodel's structs that a module reads, folded into one
// number: a module built against other headers of the same version (a
// stale build tree) is refused instead of misreading them.
constexpr uint64_t layout_fingerprint() {
  uint64_t h = kAbi;
  for (std::size_t size : {sizeof(ModelConfig), sizeof(RopeConfig), sizeof(Weights), sizeof(LayerWeights),
                           sizeof(Matrix), sizeof(Vector), sizeof(ForwardOptions), sizeof(TokenInput),
                           sizeof(GpuOptions), sizeof(Forward)})
    h = h * 1000003u ^ size;
  return h;
}

// libmodel's internals a module needs, lent by address: they are not
// exported from liblamina-model.so.
struct Host {
  // The rotary angles of the CPU path (rope.h).
  std::vector<double> (*rope_inverse_frequencies)(const ModelConfig& c, const Weights& w, bool local) = nullptr;
  double (*rope_magnitude)(const ModelConfig& c) = nullptr;
  // The CPU path's 65536-entry f16 GELU table (cpu/ops.h).
  const uint16_t* (*gelu_f16_table)() = nullptr;
};

// What a module implements.
struct Api {
  int (*device_count)() = nullptr;
  // The devices for messages ("0: NVIDIA H200, 139 GiB, cc 9.0"), or why there are none.
  std::string (*describe_devices)() = nullptr;
  // The forward pass on the device, without the parity gate (libmodel runs
  // it); throws ModelError.
  std::unique_ptr<Forward> (*make_forward)(const Model& model, const ForwardOptions& options, const GpuOptions& gpu,
                                           const Host& host) = nullptr;
};

// The members abi and version stay first, with these types, in every
// version: they are how a module of another version is recognised.
struct Entry {
  uint32_t abi;         // kAbi of the module's build
  const char* version;  // Lamina's version of the module's build (LAMINA_VERSION)
  uint64_t layout;      // layout_fingerprint() of the module's build
  const Api* api;
};

using EntryFunction = const Entry* (*)();
inline constexpr const char* kEntrySymbol = "lamina_model_backend_entry";

// The CUDA backend's file name within a backend folder.
inline constexpr const char* kCudaModuleName = "lamina-model-cuda.so";

}  // namespace lamina::model::backend
