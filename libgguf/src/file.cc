#include <algorithm>

#include "lamina/gguf/file.h"
#include "mapping.h"
#include "parse.h"

namespace lamina::gguf {
namespace {

template <typename Index>
std::optional<std::size_t> lookup(const Index& index, std::string_view name) {
  auto it = std::lower_bound(index.begin(), index.end(), name,
                             [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it == index.end() || it->first != name) return std::nullopt;
  return it->second;
}

}  // namespace

GgufError::GgufError(const std::string& message, uint64_t offset)
    : std::runtime_error(message), offset_(offset) {}

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

void GgufFile::release_pages(const void* p, std::size_t n) const {
  if (mapping_) mapping_->release(p, n);
}

void GgufFile::read_ahead(const void* p, std::size_t n) const {
  if (mapping_) mapping_->read_ahead(p, n);
}

GgufFile GgufFile::open(const std::filesystem::path& path, const ReadLimits& limits) {
  GgufFile f;
  f.mapping_ = std::make_unique<Mapping>(path);
  f.bytes_ = f.mapping_->bytes();
  try {
    parse_into(f, limits);
  } catch (const GgufError& e) {
    throw GgufError(path.string() + ": " + e.what(), e.offset());
  }
  return f;
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, const ReadLimits& limits) {
  GgufFile f;
  f.bytes_ = bytes;
  parse_into(f, limits);
  return f;
}

const Value* GgufFile::find(std::string_view key) const {
  const auto i = lookup(key_index_, key);
  return i ? &metadata_[*i].value : nullptr;
}

const Value& GgufFile::at(std::string_view key) const {
  if (const Value* v = find(key)) return *v;
  throw GgufError("missing metadata key '" + std::string(key) + "'");
}

namespace {

template <typename T>
const T& typed(const GgufFile& f, std::string_view key) {
  try {
    return f.at(key).as<T>();
  } catch (const GgufError& e) {
    if (!f.contains(key)) throw;
    throw GgufError("metadata key '" + std::string(key) + "': " + e.what());
  }
}

template <typename T>
std::vector<T> typed_array(const GgufFile& f, std::string_view key) {
  const Array& a = f.get_array(key);
  try {
    if constexpr (std::is_same_v<T, std::string>) {
      std::vector<std::string> out;
      out.reserve(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) out.emplace_back(a.string_at(i));
      return out;
    } else {
      const auto items = a.values<T>();
      return std::vector<T>(items.begin(), items.end());
    }
  } catch (const GgufError& e) {
    throw GgufError("metadata key '" + std::string(key) + "': array element " + e.what());
  }
}

}  // namespace

uint8_t GgufFile::get_u8(std::string_view key) const { return typed<uint8_t>(*this, key); }
int8_t GgufFile::get_i8(std::string_view key) const { return typed<int8_t>(*this, key); }
uint16_t GgufFile::get_u16(std::string_view key) const { return typed<uint16_t>(*this, key); }
int16_t GgufFile::get_i16(std::string_view key) const { return typed<int16_t>(*this, key); }
uint32_t GgufFile::get_u32(std::string_view key) const { return typed<uint32_t>(*this, key); }
int32_t GgufFile::get_i32(std::string_view key) const { return typed<int32_t>(*this, key); }
uint64_t GgufFile::get_u64(std::string_view key) const { return typed<uint64_t>(*this, key); }
int64_t GgufFile::get_i64(std::string_view key) const { return typed<int64_t>(*this, key); }
float GgufFile::get_f32(std::string_view key) const { return typed<float>(*this, key); }
double GgufFile::get_f64(std::string_view key) const { return typed<double>(*this, key); }
bool GgufFile::get_bool(std::string_view key) const { return typed<bool>(*this, key); }
const std::string& GgufFile::get_string(std::string_view key) const {
  return typed<std::string>(*this, key);
}

const Array& GgufFile::get_array(std::string_view key) const {
  try {
    return at(key).as_array();
  } catch (const GgufError& e) {
    if (!contains(key)) throw;
    throw GgufError("metadata key '" + std::string(key) + "': " + e.what());
  }
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  return typed_array<std::string>(*this, key);
}
std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  return typed_array<float>(*this, key);
}
std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  return typed_array<int32_t>(*this, key);
}

std::string GgufFile::architecture() const {
  const Value* v = find("general.architecture");
  return v && v->type() == ValueType::String ? v->as_string() : std::string();
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto i = lookup(tensor_index_, name);
  return i ? &tensors_[*i] : nullptr;
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  if (const TensorInfo* t = find_tensor(name)) return *t;
  throw GgufError("missing tensor '" + std::string(name) + "'");
}

}  // namespace lamina::gguf
