// A whole file mapped read-only, and whole small files read as text.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace lamina::model::hf {

class MappedFile {
 public:
  // Throws ModelError naming the path on any failure.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

// The contents of a text file (config.json and friends). Throws ModelError.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace lamina::model::hf
