#include "backend/module_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "backend_config.h"  // LAMINA_VERSION, LAMINA_BACKEND_SUBDIR (relative to the library's folder)
#include "cpu/ops.h"
#include "rope.h"

namespace lamina::model::backend {
namespace {

// The folder liblamina-model.so was loaded from (the program's own file when
// libmodel is linked statically).
std::filesystem::path library_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&library_folder), &info) == 0 || info.dli_fname == nullptr) return {};
  // Canonical, so that messages name it plainly (the loader may have found it
  // through a relative RUNPATH, ".../bin/../lib").
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::path(info.dli_fname).parent_path();
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(folder, ec);
  return ec ? folder : canonical;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

Loaded open_module(const std::string& path) {
  const std::string what = "the backend module " + path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {nullptr, what + " is not installed"};
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return {nullptr, what + " failed to load: " + dl_error()};
  const auto entry_function = reinterpret_cast<EntryFunction>(dlsym(handle, kEntrySymbol));
  const Entry* entry = entry_function ? entry_function() : nullptr;
  if (entry == nullptr) {
    dlclose(handle);
    return {nullptr, what + " is not a Lamina backend module (it has no " + kEntrySymbol + ")"};
  }
  const std::string version = entry->version ? entry->version : "(none)";
  if (entry->abi != kAbi || version != LAMINA_VERSION) {
    const std::string error = what + " is from Lamina " + version + " (backend ABI " + std::to_string(entry->abi) +
                              "), this liblamina-model is " + LAMINA_VERSION + " (backend ABI " +
                              std::to_string(kAbi) + "): refused; install the backend of the same version";
    dlclose(handle);
    return {nullptr, error};
  }
  if (entry->layout != layout_fingerprint() || entry->api == nullptr) {
    dlclose(handle);
    return {nullptr, what + " was built against other liblamina-model headers of version " + version +
                         " (the layouts of its structs differ): refused; rebuild it with this library"};
  }
  return {entry->api, {}};
}

}  // namespace

std::string module_path(const std::string& dir, const char* name) {
  const std::filesystem::path folder = dir.empty() ? library_folder() / LAMINA_BACKEND_SUBDIR : std::filesystem::path(dir);
  return (folder / name).string();
}

const Loaded& load(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  const std::lock_guard lock(mutex);
  auto it = loaded.find(path);
  if (it == loaded.end()) it = loaded.emplace(path, open_module(path)).first;
  return it->second;
}

const Host& host() {
  static const Host h{.rope_inverse_frequencies = rope_inverse_frequencies,
                      .rope_magnitude = rope_magnitude,
                      .gelu_f16_table = cpu::gelu_f16_table_data};
  return h;
}

}  // namespace lamina::model::backend
