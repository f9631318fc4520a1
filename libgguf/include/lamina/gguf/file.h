// Reading GGUF v2/v3 files: validated metadata and zero-copy tensor views.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lamina/gguf/types.h"
#include "lamina/gguf/value.h"
#include "lamina/gguf/export.h"

namespace lamina::gguf {

// Every problem with a file or a lookup. `offset` is the byte offset in the
// file where the problem was found, when there is one.
class LAMINA_GGUF_API GgufError : public std::runtime_error {
 public:
  static constexpr uint64_t kNoOffset = ~uint64_t{0};
  explicit GgufError(const std::string& message, uint64_t offset = kNoOffset);
  uint64_t offset() const { return offset_; }

 private:
  uint64_t offset_;
};

inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint32_t kDefaultAlignment = 32;

struct LAMINA_GGUF_API TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<uint64_t, kMaxDims> ne{1, 1, 1, 1};  // ne[0] is the contiguous (row) length
  TensorType type = TensorType::F32;
  uint64_t offset = 0;      // relative to the data section
  uint64_t n_elements = 0;  // product of the dims
  uint64_t n_bytes = 0;     // storage size from the type's block layout
  uint64_t info_offset = 0; // where this tensor's info starts in the file
  std::span<const std::byte> data;  // view into the mapping

  std::span<const uint64_t> shape() const { return {ne.data(), n_dims}; }
  uint64_t n_rows() const { return n_elements / ne[0]; }
  uint64_t row_bytes() const { return n_bytes / n_rows(); }
};

struct LAMINA_GGUF_API KeyValue {
  std::string key;
  Value value;
  uint64_t offset = 0;  // where the pair starts in the file
};

// Limits a reader enforces beyond the format itself, so hostile files cannot
// make it allocate without bound.
struct LAMINA_GGUF_API ReadLimits {
  uint64_t max_string_bytes = uint64_t{1} << 30;
  uint64_t max_array_depth = 8;
  uint64_t max_array_elements = uint64_t{1} << 26;  // all arrays of a file together
};

class LAMINA_GGUF_API GgufFile {
 public:
  // Maps `path` read-only and validates it completely. Throws GgufError.
  static GgufFile open(const std::filesystem::path& path, const ReadLimits& limits = {});
  // Parses a buffer the caller keeps alive as long as the GgufFile. Throws GgufError.
  static GgufFile parse(std::span<const std::byte> bytes, const ReadLimits& limits = {});
  // Builds a file in memory from metadata and tensors whose `data` views lie
  // elsewhere (another format's mapping, converted copies), so that everything
  // that reads a GgufFile reads it. Checked like a parsed file: keys and tensor
  // names non-empty, valid UTF-8 and unique; shapes, types and each view's size
  // consistent; general.alignment a power of two. n_elements, n_bytes and the
  // offsets (a layout as a writer would place the data) are filled in; `offset`
  // fields of `metadata` and `info_offset` are 0. `keep_alive` owns what the views
  // point into. The result has version 3, no bytes() and data_offset() 0.
  // Throws GgufError naming the key or tensor.
  static GgufFile assemble(std::vector<KeyValue> metadata, std::vector<TensorInfo> tensors,
                           std::shared_ptr<const void> keep_alive);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const std::byte> bytes() const { return bytes_; }

  // For data the caller has copied elsewhere and will rarely read again: the
  // whole pages of [p, p + n) that lie in this file's mapping leave the
  // process's resident memory (a later read brings them back from the file,
  // unchanged). Does nothing for the parts outside the mapping, nor for a
  // parsed or assembled file.
  void release_pages(const void* p, std::size_t n) const;
  // For data the caller will read soon: starts reading the pages of
  // [p, p + n) that lie in this file's mapping into the page cache, in the
  // background, so that a later read of them waits less. Advice only, as
  // release_pages.
  void read_ahead(const void* p, std::size_t n) const;

  // Metadata in file order.
  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Throws GgufError("missing key ...") when absent.
  const Value& at(std::string_view key) const;

  // Typed accessors: throw GgufError naming the key on a missing key or a type mismatch.
  uint8_t get_u8(std::string_view key) const;
  int8_t get_i8(std::string_view key) const;
  uint16_t get_u16(std::string_view key) const;
  int16_t get_i16(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  int32_t get_i32(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  float get_f32(std::string_view key) const;
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const Array& get_array(std::string_view key) const;
  // Arrays whose elements must all be of one type.
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;

  // "general.architecture", or an empty string when absent.
  std::string architecture() const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Throws GgufError("missing tensor ...") when absent.
  const TensorInfo& tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  friend class Parser;

  struct LAMINA_GGUF_LOCAL Mapping;
  std::unique_ptr<Mapping> mapping_;
  std::shared_ptr<const void> keep_alive_;  // what an assembled file's views point into
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
  // Sorted (name, index) pairs for lookups.
  std::vector<std::pair<std::string_view, std::size_t>> key_index_;
  std::vector<std::pair<std::string_view, std::size_t>> tensor_index_;
};

// Byte size of a tensor of `type` and shape `ne` (n_dims entries), with every
// product checked for overflow and ne[0] checked against the block size.
// Throws GgufError with a message naming the problem.
LAMINA_GGUF_API uint64_t tensor_byte_size(TensorType type, std::span<const uint64_t> ne);

}  // namespace lamina::gguf
