// Running the apps under test as a user would, and small helpers for the
// files they write.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace lamina::apps_test {

struct ToolResult {
  int exit_code = -1;  // -1 when the tool did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `program` with `args` (no shell involved) and waits for it.
ToolResult run_tool(const std::string& program, const std::vector<std::string>& args);

// A fresh, empty folder for one test's files; removed by the destructor.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& stem);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names of the entries in the folder, sorted.
  std::vector<std::string> entries() const;

 private:
  std::filesystem::path path_;
};

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);

// The test data folder (LAMINA_TESTDATA_DIR), or empty when it is missing.
std::filesystem::path testdata_dir();

}  // namespace lamina::apps_test
