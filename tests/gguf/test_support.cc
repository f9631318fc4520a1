#include "test_support.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>

namespace lamina::gguf::testing {

std::filesystem::path testdata_dir() {
#ifdef LAMINA_TESTDATA_DIR
  const std::filesystem::path dir(LAMINA_TESTDATA_DIR);
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return dir;
#endif
  return {};
}

std::vector<std::filesystem::path> all_testdata_gguf_files() {
  std::vector<std::filesystem::path> files;
  const auto dir = testdata_dir();
  if (dir.empty()) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".gguf")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::filesystem::path testdata_file(const std::string& relative) {
  return testdata_dir() / relative;
}

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!in || ec) {
    ADD_FAILURE() << "cannot open " << path;
    return {};
  }
  std::vector<std::byte> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  return bytes;
}

const std::vector<std::byte>& testdata_bytes(const std::string& relative) {
  static std::map<std::string, std::vector<std::byte>> cache;
  auto it = cache.find(relative);
  if (it == cache.end()) it = cache.emplace(relative, read_bytes(testdata_file(relative))).first;
  return it->second;
}

std::optional<GgufError> parse_error(std::span<const std::byte> bytes) {
  const auto copy = std::make_unique<std::byte[]>(bytes.size());
  std::copy(bytes.begin(), bytes.end(), copy.get());
  try {
    (void)GgufFile::parse({copy.get(), bytes.size()});
  } catch (const GgufError& e) {
    return e;
  }
  return std::nullopt;
}

std::filesystem::path make_temp_dir(const std::string& stem) {
  auto dir =
      std::filesystem::path(::testing::TempDir()) / (stem + "." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace lamina::gguf::testing
