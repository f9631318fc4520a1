// Where the bundled default model lives: next to the sources when run from a
// build tree, under the install prefix's data folder when installed.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace lamina::generate_app {

inline std::string default_model_path() {
  for (const char* candidate : {LAMINA_SOURCE_MODEL, LAMINA_INSTALLED_MODEL}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  throw std::runtime_error(std::string("no -m given and the default model is missing (looked at ") +
                           LAMINA_SOURCE_MODEL + " and " + LAMINA_INSTALLED_MODEL + ")");
}

}  // namespace lamina::generate_app
