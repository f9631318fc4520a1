// The GPU backend as a module loaded at run time, on any machine (no GPU
// needed): a missing, unloadable or foreign module is refused with a message
// naming its path and the cause; --device auto then runs on the CPU and says
// why, --device cuda fails with the same reason. With the CUDA module of this
// build (LAMINA_CUDA_BACKEND_DIR, where CUDA is built) the module loads and
// the only remaining reason is the absence of a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backend_config.h"  // LAMINA_VERSION, LAMINA_BACKEND_SUBDIR
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
const fs::path kModel = fs::path(LAMINA_TESTDATA_DIR) / "models" / "stories260K.gguf";
constexpr const char* kModuleName = "lamina-model-cuda.so";

fs::path test_root() { return fs::temp_directory_path() / ("lamina_backend_test_" + std::to_string(::getpid())); }

// Removes the tests' folders when the suite ends.
class RemoveTestFolders : public ::testing::Environment {
  void TearDown() override { fs::remove_all(test_root()); }
};
[[maybe_unused]] const auto* const kRemoveTestFolders = ::testing::AddGlobalTestEnvironment(new RemoveTestFolders);

// A fresh empty folder per test (the loader remembers each path's result).
fs::path empty_folder(const std::string& name) {
  const fs::path dir = test_root() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// `module` copied into a fresh folder under the name libmodel looks for.
fs::path folder_with(const std::string& name, const fs::path& module) {
  const fs::path dir = empty_folder(name);
  fs::copy_file(module, dir / kModuleName);
  return dir;
}

std::string contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos ? "" : "\"" + text + "\" lacks \"" + part + "\"";
}

// What make_gpu_forward says, or "" when it succeeds.
std::string gpu_error(const Model& m, const GpuOptions& gpu) {
  try {
    (void)make_gpu_forward(m, {.n_ctx = 32}, gpu);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

std::unique_ptr<Model> load_model() {
  return fs::exists(kModel) ? Model::load(kModel) : nullptr;
}

TEST(BackendModule, MissingModuleIsNamedAndAutoFallsBackToTheCpu) {
  const auto m = load_model();
  if (!m) GTEST_SKIP() << "no " << kModel;
  const fs::path dir = empty_folder("missing");
  const GpuOptions gpu{.backend_dir = dir.string()};
  const std::string reason = "the backend module " + (dir / kModuleName).string() + " is not installed";
  EXPECT_FALSE(gpu_available(gpu));
  EXPECT_EQ(gpu_description(gpu), reason);
  EXPECT_EQ(gpu_error(*m, gpu), "the GPU is not available: " + reason);

  std::string note;
  const auto fwd = make_forward(*m, {.n_ctx = 32}, Device::Auto, gpu, &note);
  EXPECT_EQ(fwd->backend_name().rfind("CPU", 0), 0u) << fwd->backend_name();
  EXPECT_EQ(note, "GPU not used: " + reason);
  EXPECT_THROW((void)make_forward(*m, {.n_ctx = 32}, Device::Cuda, gpu), ModelError);
}

// The q8_0 KV cache has CPU kernels only: libmodel refuses it for the GPU
// before looking for a module, whether or not one would load.
TEST(BackendModule, Q8_0KvCacheIsRefusedForTheGpu) {
  const auto m = load_model();
  if (!m) GTEST_SKIP() << "no " << kModel;
  try {
    (void)make_gpu_forward(*m, {.n_ctx = 32, .kv_type = KvType::Q8_0}, GpuOptions{});
    ADD_FAILURE() << "a q8_0 KV cache was accepted for the GPU";
  } catch (const ModelError& e) {
    EXPECT_EQ(contains(e.what(), "the q8_0 KV cache runs on the CPU only"), "");
  }
  EXPECT_THROW((void)make_forward(*m, {.n_ctx = 32, .kv_type = KvType::Q8_0}, Device::Cuda, GpuOptions{}), ModelError);
}

// By default the module is looked for beside liblamina-model.so, wherever
// that is (here the build tree), never in a folder compiled in.
TEST(BackendModule, DefaultFolderIsRelativeToTheLibrary) {
  const std::string text = gpu_description();
  EXPECT_EQ(contains(text, std::string("/" LAMINA_BACKEND_SUBDIR "/") + kModuleName + " is not installed"), "");
  EXPECT_EQ(contains(text, "the backend module /"), "") << "an absolute path";
}

TEST(BackendModule, UnloadableFileGivesTheLoadersMessage) {
  const fs::path dir = empty_folder("not_elf");
  {
    std::ofstream out(dir / kModuleName);  // longer than an ELF header, so that its start is checked
    for (int i = 0; i < 16; ++i) out << "not a shared object\n";
  }
  const GpuOptions gpu{.backend_dir = dir.string()};
  EXPECT_FALSE(gpu_available(gpu));
  const std::string text = gpu_description(gpu);
  EXPECT_EQ(contains(text, "the backend module " + (dir / kModuleName).string() + " failed to load: "), "");
  EXPECT_EQ(contains(text, "invalid ELF header"), "");  // dlerror's words
}

TEST(BackendModule, LibraryWithoutTheEntryPointIsRefused) {
  const fs::path dir = folder_with("no_entry", LAMINA_FAKE_MODULE_NO_ENTRY);
  const std::string text = gpu_description({.backend_dir = dir.string()});
  EXPECT_EQ(contains(text, (dir / kModuleName).string() + " is not a Lamina backend module"), "");
}

TEST(BackendModule, ModuleOfAnotherVersionIsRefused) {
  const auto m = load_model();
  const fs::path dir = folder_with("other_version", LAMINA_FAKE_MODULE_VERSION);
  const GpuOptions gpu{.backend_dir = dir.string()};
  EXPECT_FALSE(gpu_available(gpu));
  const std::string text = gpu_description(gpu);
  EXPECT_EQ(contains(text, (dir / kModuleName).string() + " is from Lamina 0.0.1-another"), "");
  EXPECT_EQ(contains(text, std::string("this liblamina-model is ") + LAMINA_VERSION), "");
  EXPECT_EQ(contains(text, "refused"), "");
  if (m) {
    EXPECT_EQ(gpu_error(*m, gpu), "the GPU is not available: " + text);
  }
}

TEST(BackendModule, ModuleOfAnotherBackendAbiIsRefused) {
  const fs::path dir = folder_with("other_abi", LAMINA_FAKE_MODULE_ABI);
  const std::string text = gpu_description({.backend_dir = dir.string()});
  EXPECT_EQ(contains(text, (dir / kModuleName).string() + " is from Lamina " + LAMINA_VERSION + " (backend ABI "),
            "");
  EXPECT_EQ(contains(text, "refused"), "");
}

TEST(BackendModule, ModuleBuiltAgainstOtherHeadersIsRefused) {
  const fs::path dir = folder_with("other_layout", LAMINA_FAKE_MODULE_LAYOUT);
  const std::string text = gpu_description({.backend_dir = dir.string()});
  EXPECT_EQ(contains(text, "built against other liblamina-model headers"), "");
}

#ifdef LAMINA_CUDA_BACKEND_DIR
// This build's CUDA module loads; what remains is whether a device exists.
// Where the build tree is absent (a bundle of tools/gpu/bundle.sh on a GPU
// machine), the module beside libmodel, where an install has it.
TEST(BackendModule, CudaModuleOfThisBuildLoads) {
  const auto m = load_model();
  if (!m) GTEST_SKIP() << "no " << kModel;
  const GpuOptions gpu{.backend_dir = fs::exists(LAMINA_CUDA_BACKEND_DIR) ? LAMINA_CUDA_BACKEND_DIR : ""};
  const std::string text = gpu_description(gpu);
  std::string note;
  const auto fwd = make_forward(*m, {.n_ctx = 32}, Device::Auto, gpu, &note);
  if (gpu_available(gpu)) {
    EXPECT_EQ(contains(text, "0: "), "");
    EXPECT_EQ(fwd->backend_name().rfind("CUDA", 0), 0u) << fwd->backend_name() << "; " << note;
  } else {
    EXPECT_EQ(text, "no CUDA device visible");
    EXPECT_EQ(note, "GPU not used: no CUDA device visible");
    EXPECT_EQ(fwd->backend_name().rfind("CPU", 0), 0u);
    EXPECT_EQ(gpu_error(*m, gpu), "the GPU is not available: no CUDA device visible");
  }
}
#endif

}  // namespace
}  // namespace lamina::model
