// Strict GGUF v2/v3 parser: every count, length, dimension product and offset
// is checked against overflow and the file size before it is used.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "lamina/gguf/file.h"
#include "parse.h"
#include "utf8.h"

namespace lamina::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kMaxKeyBytes = 65535;

std::string at_offset(uint64_t offset, const std::string& what) {
  return "offset " + std::to_string(offset) + ": " + what;
}

class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const ReadLimits& limits)
      : bytes_(bytes), limits_(limits) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void fail(const std::string& what, uint64_t offset) const {
    throw GgufError(at_offset(offset, what), offset);
  }

  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      fail(std::string("file truncated while reading ") + what + " (need " + std::to_string(n) +
               " bytes, " + std::to_string(remaining()) + " left)",
           pos_);
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    std::string s;
    append_string(s, what);
    return s;
  }

  // Reads a length-prefixed string onto the end of `out`.
  void append_string(std::string& out, const char* what) {
    const uint64_t len = read_string_length(what);
    out.append(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
  }

  const std::byte* here() const { return bytes_.data() + pos_; }

  // Total length of the `count` strings that start here, checked like append_string
  // would check them, without moving; lets a string array be stored without slack.
  uint64_t string_bytes_ahead(uint64_t count, const char* what) {
    const uint64_t start = pos_;
    uint64_t total = 0;
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t len = read_string_length(what);
      pos_ += len;
      total += len;  // cannot overflow: every string lies inside the file
    }
    pos_ = start;
    return total;
  }

  void skip_to(uint64_t offset) { pos_ = offset; }

 private:
  // A string's length prefix, checked against the limit and the bytes left.
  uint64_t read_string_length(const char* what) {
    const uint64_t start = pos_;
    const uint64_t len = read<uint64_t>(what);
    if (len > limits_.max_string_bytes)
      fail(std::string(what) + " length " + std::to_string(len) + " exceeds the limit", start);
    need(len, what);
    return len;
  }

  std::span<const std::byte> bytes_;
  const ReadLimits& limits_;
  uint64_t pos_ = 0;
};

// Smallest encoding of one element of `type`; used to bound element counts
// by the bytes left before anything is allocated.
uint64_t min_encoded_size(ValueType type) {
  switch (type) {
    case ValueType::UInt8:
    case ValueType::Int8:
    case ValueType::Bool: return 1;
    case ValueType::UInt16:
    case ValueType::Int16: return 2;
    case ValueType::UInt32:
    case ValueType::Int32:
    case ValueType::Float32: return 4;
    case ValueType::UInt64:
    case ValueType::Int64:
    case ValueType::Float64:
    case ValueType::String: return 8;
    case ValueType::Array: return 12;
  }
  return 1;
}

}  // namespace

class Parser {
 public:
  Parser(std::span<const std::byte> bytes, const ReadLimits& limits)
      : cur_(bytes, limits), limits_(limits) {}

  void run(GgufFile& f) {
    read_header(f);
    read_metadata(f);
    read_alignment(f);
    read_tensor_infos(f);
    place_data_section(f);
    check_tensor_data(f);
    build_indexes(f);
  }

 private:
  void read_header(GgufFile& f) {
    if (cur_.remaining() < 4) cur_.fail("file too small for a GGUF header", 0);
    const auto magic = cur_.read<uint32_t>("magic");
    if (magic != kMagic) cur_.fail("bad magic: not a GGUF file", 0);
    const auto version = cur_.read<uint32_t>("version");
    if (version == 1) cur_.fail("GGUF version 1 is not supported (only versions 2 and 3)", 4);
    if (version != 2 && version != 3) {
      if (version == 0x02000000 || version == 0x03000000)
        cur_.fail("big-endian GGUF files are not supported", 4);
      cur_.fail("unsupported GGUF version " + std::to_string(version), 4);
    }
    f.version_ = version;
    n_tensors_ = cur_.read<uint64_t>("tensor count");
    n_kv_ = cur_.read<uint64_t>("metadata count");
    // Each pair takes at least 12 bytes and each tensor info at least 24.
    if (n_kv_ > cur_.remaining() / 12)
      cur_.fail("metadata count " + std::to_string(n_kv_) + " cannot fit in the file", 16);
    if (n_tensors_ > cur_.remaining() / 24)
      cur_.fail("tensor count " + std::to_string(n_tensors_) + " cannot fit in the file", 8);
  }

  void read_metadata(GgufFile& f) {
    f.metadata_.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const uint64_t start = cur_.pos();
      std::string key = cur_.read_string("metadata key");
      if (key.empty()) cur_.fail("empty metadata key", start);
      if (key.size() > kMaxKeyBytes)
        cur_.fail("metadata key longer than " + std::to_string(kMaxKeyBytes) + " bytes", start);
      if (!is_valid_utf8(key)) cur_.fail("metadata key is not valid UTF-8", start);
      const uint64_t type_pos = cur_.pos();
      const auto type_id = cur_.read<uint32_t>("value type");
      if (!is_known_value_type(type_id))
        cur_.fail("key '" + key + "': unknown value type " + std::to_string(type_id), type_pos);
      Value value = read_value(static_cast<ValueType>(type_id), 0, key);
      f.metadata_.push_back({std::move(key), std::move(value), start});
    }
    // Duplicates: sort a copy of (key, index) once instead of a quadratic scan.
    std::vector<std::pair<std::string_view, std::size_t>> sorted;
    sorted.reserve(f.metadata_.size());
    for (std::size_t i = 0; i < f.metadata_.size(); ++i) sorted.emplace_back(f.metadata_[i].key, i);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      if (sorted[i].first == sorted[i - 1].first) {
        const auto& later = f.metadata_[std::max(sorted[i].second, sorted[i - 1].second)];
        cur_.fail("duplicate metadata key '" + later.key + "'", later.offset);
      }
    }
  }

  Value read_value(ValueType type, uint32_t depth, const std::string& key) {
    switch (type) {
      case ValueType::UInt8: return Value::u8(cur_.read<uint8_t>("uint8 value"));
      case ValueType::Int8: return Value::i8(cur_.read<int8_t>("int8 value"));
      case ValueType::UInt16: return Value::u16(cur_.read<uint16_t>("uint16 value"));
      case ValueType::Int16: return Value::i16(cur_.read<int16_t>("int16 value"));
      case ValueType::UInt32: return Value::u32(cur_.read<uint32_t>("uint32 value"));
      case ValueType::Int32: return Value::i32(cur_.read<int32_t>("int32 value"));
      case ValueType::Float32: return Value::f32(cur_.read<float>("float32 value"));
      case ValueType::UInt64: return Value::u64(cur_.read<uint64_t>("uint64 value"));
      case ValueType::Int64: return Value::i64(cur_.read<int64_t>("int64 value"));
      case ValueType::Float64: return Value::f64(cur_.read<double>("float64 value"));
      case ValueType::Bool: {
        const uint64_t at = cur_.pos();
        const auto b = cur_.read<uint8_t>("bool value");
        if (b > 1) cur_.fail("key '" + key + "': bool value " + std::to_string(b) + " is not 0 or 1", at);
        return Value::boolean(b != 0);
      }
      case ValueType::String: return Value::string(cur_.read_string("string value"));
      case ValueType::Array: return read_array(depth, key);
    }
    cur_.fail("key '" + key + "': unknown value type", cur_.pos());
  }

  Value read_array(uint32_t depth, const std::string& key) {
    const uint64_t start = cur_.pos();
    if (depth >= limits_.max_array_depth)
      cur_.fail("key '" + key + "': arrays nested deeper than " +
                    std::to_string(limits_.max_array_depth),
                start);
    const auto elem_id = cur_.read<uint32_t>("array element type");
    if (!is_known_value_type(elem_id))
      cur_.fail("key '" + key + "': unknown array element type " + std::to_string(elem_id), start);
    const auto elem = static_cast<ValueType>(elem_id);
    const uint64_t count_pos = cur_.pos();
    const auto count = cur_.read<uint64_t>("array length");
    if (count > cur_.remaining() / min_encoded_size(elem))
      cur_.fail("key '" + key + "': array length " + std::to_string(count) +
                    " cannot fit in the file",
                count_pos);
    total_elements_ += count;
    if (total_elements_ > limits_.max_array_elements)
      cur_.fail("key '" + key + "': more than " + std::to_string(limits_.max_array_elements) +
                    " array elements in the file",
                count_pos);
    return Value::array(read_elements(elem, count, depth, key));
  }

  template <typename T>
  Array read_scalars(uint64_t count, const char* what) {
    cur_.need(count * sizeof(T), what);  // count * size cannot overflow: bounded by remaining()
    std::vector<T> items(count);
    if (count) std::memcpy(items.data(), cur_.here(), count * sizeof(T));
    cur_.skip_to(cur_.pos() + count * sizeof(T));
    return Array::of(std::move(items));
  }

  Array read_elements(ValueType elem, uint64_t count, uint32_t depth, const std::string& key) {
    switch (elem) {
      case ValueType::UInt8: return read_scalars<uint8_t>(count, "uint8 array");
      case ValueType::Int8: return read_scalars<int8_t>(count, "int8 array");
      case ValueType::UInt16: return read_scalars<uint16_t>(count, "uint16 array");
      case ValueType::Int16: return read_scalars<int16_t>(count, "int16 array");
      case ValueType::UInt32: return read_scalars<uint32_t>(count, "uint32 array");
      case ValueType::Int32: return read_scalars<int32_t>(count, "int32 array");
      case ValueType::Float32: return read_scalars<float>(count, "float32 array");
      case ValueType::UInt64: return read_scalars<uint64_t>(count, "uint64 array");
      case ValueType::Int64: return read_scalars<int64_t>(count, "int64 array");
      case ValueType::Float64: return read_scalars<double>(count, "float64 array");
      case ValueType::Bool: {
        std::vector<bool> items(count);
        for (uint64_t i = 0; i < count; ++i) items[i] = read_value(elem, depth + 1, key).as<bool>();
        return Array::of(std::move(items));
      }
      case ValueType::String: {
        Array::Strings s;
        s.chars.reserve(cur_.string_bytes_ahead(count, "string value"));
        s.ends.reserve(count);
        for (uint64_t i = 0; i < count; ++i) {
          cur_.append_string(s.chars, "string value");
          s.ends.push_back(s.chars.size());
        }
        return Array(Array::Items(std::in_place_index<8>, std::move(s)));
      }
      case ValueType::Array: {
        std::vector<Value> items;
        items.reserve(count);
        for (uint64_t i = 0; i < count; ++i) items.push_back(read_array(depth + 1, key));
        return Array(Array::Items(std::in_place_index<9>, std::move(items)));
      }
    }
    cur_.fail("key '" + key + "': unknown array element type", cur_.pos());
  }

  void read_alignment(GgufFile& f) {
    f.alignment_ = kDefaultAlignment;
    for (const auto& kv : f.metadata_) {
      if (kv.key != "general.alignment") continue;
      if (kv.value.type() != ValueType::UInt32)
        cur_.fail("general.alignment must be uint32, found " +
                      std::string(value_type_name(kv.value.type())),
                  kv.offset);
      const uint32_t a = kv.value.as<uint32_t>();
      if (a == 0 || !std::has_single_bit(a))
        cur_.fail("general.alignment " + std::to_string(a) + " is not a power of two", kv.offset);
      f.alignment_ = a;
    }
  }

  void read_tensor_infos(GgufFile& f) {
    f.tensors_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      TensorInfo t;
      t.info_offset = cur_.pos();
      t.name = cur_.read_string("tensor name");
      const std::string who = "tensor '" + t.name + "'";
      if (t.name.empty()) cur_.fail("empty tensor name", t.info_offset);
      if (!is_valid_utf8(t.name)) cur_.fail("tensor name is not valid UTF-8", t.info_offset);
      const uint64_t dims_pos = cur_.pos();
      t.n_dims = cur_.read<uint32_t>("tensor n_dims");
      if (t.n_dims == 0 || t.n_dims > kMaxDims)
        cur_.fail(who + ": n_dims " + std::to_string(t.n_dims) + " is not in 1.." +
                      std::to_string(kMaxDims),
                  dims_pos);
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t at = cur_.pos();
        t.ne[d] = cur_.read<uint64_t>("tensor dimension");
        if (t.ne[d] == 0) cur_.fail(who + ": dimension " + std::to_string(d) + " is zero", at);
        // ggml stores dims as int64: a larger value would go negative there.
        if (t.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          cur_.fail(who + ": dimension " + std::to_string(d) + " is too large", at);
      }
      const uint64_t type_pos = cur_.pos();
      const auto type_id = cur_.read<uint32_t>("tensor type");
      const auto* traits = tensor_type_traits(type_id);
      if (!traits) cur_.fail(who + ": unknown tensor type id " + std::to_string(type_id), type_pos);
      t.type = traits->type;
      try {
        t.n_bytes = tensor_byte_size(t.type, t.shape());
      } catch (const GgufError& e) {
        cur_.fail(who + ": " + e.what(), dims_pos);
      }
      t.n_elements = 1;
      for (uint32_t d = 0; d < t.n_dims; ++d) t.n_elements *= t.ne[d];  // checked above
      const uint64_t off_pos = cur_.pos();
      t.offset = cur_.read<uint64_t>("tensor data offset");
      if (t.offset % f.alignment_ != 0)
        cur_.fail(who + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                      std::to_string(f.alignment_),
                  off_pos);
      f.tensors_.push_back(std::move(t));
    }
  }

  void place_data_section(GgufFile& f) {
    const uint64_t end_of_infos = cur_.pos();
    const uint64_t a = f.alignment_;
    const uint64_t pad = (a - end_of_infos % a) % a;
    f.data_offset_ = end_of_infos + pad;  // cannot overflow: end_of_infos <= file size
    if (!f.tensors_.empty() && f.data_offset_ > f.bytes_.size())
      cur_.fail("data section starts at " + std::to_string(f.data_offset_) + ", past the end of the file",
                end_of_infos);
  }

  void check_tensor_data(GgufFile& f) {
    const uint64_t data_size =
        f.data_offset_ <= f.bytes_.size() ? f.bytes_.size() - f.data_offset_ : 0;
    std::vector<std::size_t> order(f.tensors_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (auto& t : f.tensors_) {
      if (t.offset > data_size || t.n_bytes > data_size - t.offset)
        cur_.fail("tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" +
                      std::to_string(t.n_bytes) + ") runs past the end of the file (data section is " +
                      std::to_string(data_size) + " bytes)",
                  t.info_offset);
      t.data = f.bytes_.subspan(f.data_offset_ + t.offset, t.n_bytes);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return f.tensors_[x].offset < f.tensors_[y].offset;
    });
    for (std::size_t i = 1; i < order.size(); ++i) {
      const auto& prev = f.tensors_[order[i - 1]];
      const auto& cur = f.tensors_[order[i]];
      if (cur.offset < prev.offset + prev.n_bytes)
        cur_.fail("tensor '" + cur.name + "' overlaps the data of tensor '" + prev.name + "'",
                  cur.info_offset);
    }
  }

  void build_indexes(GgufFile& f) {
    for (std::size_t i = 0; i < f.metadata_.size(); ++i)
      f.key_index_.emplace_back(f.metadata_[i].key, i);
    std::sort(f.key_index_.begin(), f.key_index_.end());
    for (std::size_t i = 0; i < f.tensors_.size(); ++i)
      f.tensor_index_.emplace_back(f.tensors_[i].name, i);
    std::sort(f.tensor_index_.begin(), f.tensor_index_.end());
    for (std::size_t i = 1; i < f.tensor_index_.size(); ++i) {
      if (f.tensor_index_[i].first == f.tensor_index_[i - 1].first) {
        const auto& later =
            f.tensors_[std::max(f.tensor_index_[i].second, f.tensor_index_[i - 1].second)];
        cur_.fail("duplicate tensor name '" + later.name + "'", later.info_offset);
      }
    }
  }

  Cursor cur_;
  const ReadLimits& limits_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t total_elements_ = 0;
};

void parse_into(GgufFile& f, const ReadLimits& limits) {
  Parser p(f.bytes(), limits);
  p.run(f);
}

uint64_t tensor_byte_size(TensorType type, std::span<const uint64_t> ne) {
  const auto* traits = tensor_type_traits(type);
  if (!traits) throw GgufError("unknown tensor type id " + std::to_string(static_cast<uint32_t>(type)));
  if (ne.empty()) throw GgufError("tensor has no dimensions");
  if (ne[0] % traits->block_size != 0)
    throw GgufError("row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                    std::string(traits->name) + " block size " + std::to_string(traits->block_size));
  uint64_t n = 1;
  for (uint64_t d : ne) {
    if (d == 0) throw GgufError("a dimension is zero");
    if (n > std::numeric_limits<uint64_t>::max() / d) throw GgufError("element count overflows");
    n *= d;
  }
  const uint64_t blocks = n / traits->block_size;
  if (blocks > std::numeric_limits<uint64_t>::max() / traits->type_size)
    throw GgufError("byte size overflows");
  return blocks * traits->type_size;
}

}  // namespace lamina::gguf
