// Test-only GGUF layout walker: where each field of a well-formed file sits,
// so tests can corrupt exactly one field. It shares no code with libgguf and
// trusts its input (it is only run on files the real reader accepted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::gguf::testing {

struct KvLayout {
  std::string key;
  uint64_t start = 0;      // the key's u64 length
  uint64_t type_pos = 0;   // the u32 value type
  uint64_t value_pos = 0;  // the value (for arrays: the u32 element type)
  uint64_t end = 0;        // one past the value
  uint32_t type = 0;
  // Arrays only.
  uint32_t element_type = 0;
  uint64_t count_pos = 0;
  uint64_t count = 0;
};

struct TensorLayout {
  std::string name;
  uint64_t start = 0;  // the name's u64 length
  uint64_t n_dims_pos = 0;
  std::vector<uint64_t> dim_pos;
  uint64_t type_pos = 0;
  uint64_t offset_pos = 0;
  uint64_t end = 0;
  std::vector<uint64_t> ne;
  uint32_t type = 0;
  uint64_t offset = 0;  // relative to the data section
};

struct FileLayout {
  static constexpr uint64_t kVersionPos = 4;
  static constexpr uint64_t kTensorCountPos = 8;
  static constexpr uint64_t kKvCountPos = 16;
  static constexpr uint64_t kFirstKvPos = 24;

  std::vector<KvLayout> kvs;
  std::vector<TensorLayout> tensors;
  uint64_t infos_end = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;

  // Throws std::out_of_range when absent.
  const KvLayout& kv(std::string_view key) const;
  const TensorLayout& tensor(std::string_view name) const;
};

FileLayout walk_layout(std::span<const std::byte> bytes);

// Overwrites a little-endian value in place.
template <typename T>
void poke(std::vector<std::byte>& bytes, uint64_t pos, T value) {
  std::memcpy(bytes.data() + pos, &value, sizeof(T));
}
template <typename T>
T peek(std::span<const std::byte> bytes, uint64_t pos) {
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof(T));
  return value;
}

}  // namespace lamina::gguf::testing
