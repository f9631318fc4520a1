// Strict reader of the safetensors format: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then
// the data. Self-contained (C++ standard library and nlohmann/json only), so
// the fuzzer compiles it on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::model::hf {

// Every problem with a safetensors file or shard index; the message names the
// file and, where there is one, the tensor.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The element types lamina reads; other safetensors dtypes are rejected by name.
// U8 holds packed codes and scales (gpt-oss's MXFP4 experts), never plain weights.
enum class Dtype { F32, F16, BF16, U8 };

std::string_view dtype_name(Dtype dtype);
std::size_t dtype_size(Dtype dtype);

struct SafetensorsTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<uint64_t> shape;  // PyTorch order: the outermost dimension first
  std::span<const std::byte> data;

  uint64_t n_elements() const;
};

struct SafetensorsFile {
  std::vector<SafetensorsTensor> tensors;                // in the order of their data
  std::map<std::string, std::string> metadata;          // the optional "__metadata__"
};

// Limits beyond the format, so a hostile header cannot make the reader
// allocate or recurse without bound.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
inline constexpr std::size_t kMaxRank = 8;

// Parses a whole file held in `bytes` (which must outlive the result: tensor
// data are views into it). Checks the header length against the file, the JSON,
// every dtype and shape, that each byte range lies inside the data section and
// matches its shape, and that no two ranges overlap. Throws SafetensorsError
// with messages that start with `file_name`.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view file_name);

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file}}.
// Returns the weight map. Shard names must be plain file names (no directories).
std::map<std::string, std::string> parse_safetensors_index(std::string_view json_text, std::string_view file_name);

}  // namespace lamina::model::hf
