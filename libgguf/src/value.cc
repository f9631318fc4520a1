#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "lamina/gguf/file.h"
#include "lamina/gguf/value.h"

namespace lamina::gguf {
namespace {

template <typename T>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return static_cast<ValueType>(0);
  else if constexpr (std::is_same_v<T, int8_t>) return static_cast<ValueType>(1);
  else if constexpr (std::is_same_v<T, uint16_t>) return static_cast<ValueType>(2);
  else if constexpr (std::is_same_v<T, int16_t>) return static_cast<ValueType>(3);
  else if constexpr (std::is_same_v<T, uint32_t>) return static_cast<ValueType>(4);
  else if constexpr (std::is_same_v<T, int32_t>) return static_cast<ValueType>(5);
  else if constexpr (std::is_same_v<T, float>) return static_cast<ValueType>(6);
  else if constexpr (std::is_same_v<T, bool>) return static_cast<ValueType>(7);
  else if constexpr (std::is_same_v<T, std::string>) return static_cast<ValueType>(8);
  else if constexpr (std::is_same_v<T, uint64_t>) return static_cast<ValueType>(10);
  else if constexpr (std::is_same_v<T, int64_t>) return static_cast<ValueType>(11);
  else if constexpr (std::is_same_v<T, double>) return static_cast<ValueType>(12);
  else static_assert(!sizeof(T*), "not a GGUF scalar type");
}

[[noreturn]] void throw_type_mismatch(ValueType want, ValueType have) {
  throw GgufError("type mismatch: expected " + std::string(value_type_name(want)) + ", found " +
                  std::string(value_type_name(have)));
}

void append_display(std::ostringstream& out, const Value& v, std::size_t max_items) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out << '"';
          for (char c : x) {
            if (c == '"' || c == '\\') out << '\\' << c;
            else if (c == '\n') out << "\\n";
            else if (c == '\t') out << "\\t";
            else if (static_cast<unsigned char>(c) < 0x20) out << '?';
            else out << c;
          }
          out << '"';
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Array>>) {
          const auto& items = x->items;
          const std::size_t shown =
              max_items == 0 ? items.size() : std::min(items.size(), max_items);
          out << '[';
          for (std::size_t i = 0; i < shown; ++i) {
            if (i) out << ", ";
            append_display(out, items[i], max_items);
          }
          if (shown < items.size()) out << ", ... (" << items.size() << " items)";
          out << ']';
        } else if constexpr (std::is_same_v<T, bool>) {
          out << (x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          out << static_cast<int>(x);
        } else if constexpr (std::is_floating_point_v<T>) {
          // Shortest text that reads back to the same value.
          char buf[64];
          const auto r = std::to_chars(buf, buf + sizeof buf, x);
          out << std::string_view(buf, static_cast<std::size_t>(r.ptr - buf));
        } else {
          out << x;
        }
      },
      v.storage());
}

}  // namespace

template <typename T>
const T& Value::as() const {
  if (const T* p = std::get_if<T>(&storage_)) return *p;
  throw_type_mismatch(value_type_of<T>(), type());
}

template const uint8_t& Value::as<uint8_t>() const;
template const int8_t& Value::as<int8_t>() const;
template const uint16_t& Value::as<uint16_t>() const;
template const int16_t& Value::as<int16_t>() const;
template const uint32_t& Value::as<uint32_t>() const;
template const int32_t& Value::as<int32_t>() const;
template const float& Value::as<float>() const;
template const bool& Value::as<bool>() const;
template const std::string& Value::as<std::string>() const;
template const uint64_t& Value::as<uint64_t>() const;
template const int64_t& Value::as<int64_t>() const;
template const double& Value::as<double>() const;

const Array& Value::as_array() const {
  if (const auto* p = std::get_if<std::shared_ptr<const Array>>(&storage_)) return **p;
  throw_type_mismatch(ValueType::Array, type());
}

int64_t Value::as_int64() const {
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
              throw GgufError("integer value " + std::to_string(x) + " does not fit in int64");
          }
          return static_cast<int64_t>(x);
        } else {
          throw GgufError("expected an integer, found " + std::string(value_type_name(type())));
        }
      },
      storage_);
}

uint64_t Value::as_uint64() const {
  return std::visit(
      [&](const auto& x) -> uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (x < 0) throw GgufError("negative value " + std::to_string(x) + " where unsigned expected");
          }
          return static_cast<uint64_t>(x);
        } else {
          throw GgufError("expected an integer, found " + std::string(value_type_name(type())));
        }
      },
      storage_);
}

double Value::as_double() const {
  if (const auto* f = std::get_if<float>(&storage_)) return *f;
  if (const auto* d = std::get_if<double>(&storage_)) return *d;
  throw GgufError("expected a float, found " + std::string(value_type_name(type())));
}

bool Value::operator==(const Value& other) const {
  if (type() != other.type()) return false;
  if (type() != ValueType::Array) {
    // Compare floats bitwise so NaN round-trips compare equal.
    if (const auto* f = std::get_if<float>(&storage_)) {
      const float g = std::get<float>(other.storage_);
      return std::memcmp(f, &g, sizeof g) == 0;
    }
    if (const auto* d = std::get_if<double>(&storage_)) {
      const double e = std::get<double>(other.storage_);
      return std::memcmp(d, &e, sizeof e) == 0;
    }
    return storage_ == other.storage_;
  }
  const Array& a = as_array();
  const Array& b = other.as_array();
  return a.element_type == b.element_type && a.items == b.items;
}

Value Value::string_array(const std::vector<std::string>& items) {
  Array a{ValueType::String, {}};
  a.items.reserve(items.size());
  for (const auto& s : items) a.items.push_back(Value::string(s));
  return Value::array(std::move(a));
}

Value Value::f32_array(const std::vector<float>& items) {
  Array a{ValueType::Float32, {}};
  a.items.reserve(items.size());
  for (float f : items) a.items.push_back(Value::f32(f));
  return Value::array(std::move(a));
}

Value Value::i32_array(const std::vector<int32_t>& items) {
  Array a{ValueType::Int32, {}};
  a.items.reserve(items.size());
  for (int32_t i : items) a.items.push_back(Value::i32(i));
  return Value::array(std::move(a));
}

std::string to_display_string(const Value& v, std::size_t max_items) {
  std::ostringstream out;
  append_display(out, v, max_items);
  return out.str();
}

}  // namespace lamina::gguf
