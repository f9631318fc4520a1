// Where the bundled default model lives: under the install prefix's data
// folder when installed; in a build tree, the copy the build puts beside the
// program (so no path of the build machine is compiled into a program).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace lamina::apps {

inline std::string default_model_path() {
  const std::filesystem::path installed = LAMINA_INSTALLED_MODEL;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // The copy keeps the file's name: serving it names the model after it.
    const std::filesystem::path beside = self.parent_path() / installed.filename();
    if (std::filesystem::is_regular_file(beside, ec)) return beside.string();
  }
  if (std::filesystem::is_regular_file(installed, ec)) return installed.string();
  throw std::runtime_error("no -m given and the default model is missing (looked at " + installed.string() +
                           " and for " + installed.filename().string() + " beside the program)");
}

}  // namespace lamina::apps
