// A read-only memory mapping of a whole file (internal to libgguf).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

#include "lamina/gguf/file.h"

namespace lamina::gguf {

struct GgufFile::Mapping {
  explicit Mapping(const std::filesystem::path& path);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr), size}; }
  // GgufFile::release_pages for this mapping.
  void release(const void* p, std::size_t n) const;
  // GgufFile::read_ahead for this mapping.
  void read_ahead(const void* p, std::size_t n) const;

  void* addr = nullptr;
  std::size_t size = 0;
};

}  // namespace lamina::gguf
