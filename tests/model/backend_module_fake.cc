// A backend module that libmodel must refuse: built once per defect
// (FAKE_DEFECT: 0 no entry point, 1 another Lamina version, 2 another
// backend ABI, 3 other struct layouts of the same version). Its Api is null: a loader that used
// it anyway would crash the test.
#include "backend/module_abi.h"
#include "backend_config.h"  // LAMINA_VERSION

namespace {

using lamina::model::backend::Entry;

constexpr Entry kEntry{
    .abi = lamina::model::backend::kAbi + (FAKE_DEFECT == 2 ? 1 : 0),
    .version = FAKE_DEFECT == 1 ? "0.0.1-another" : LAMINA_VERSION,
    .layout = lamina::model::backend::layout_fingerprint() + (FAKE_DEFECT == 3 ? 1 : 0),
    .api = nullptr,
};

}  // namespace

#if FAKE_DEFECT != 0
extern "C" __attribute__((visibility("default"))) const Entry* lamina_model_backend_entry() { return &kEntry; }
#else
extern "C" __attribute__((visibility("default"))) const Entry* another_entry() { return &kEntry; }
#endif
