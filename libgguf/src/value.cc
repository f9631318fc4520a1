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
          const std::size_t n = x->size();
          const std::size_t shown = max_items == 0 ? n : std::min(n, max_items);
          out << '[';
          for (std::size_t i = 0; i < shown; ++i) {
            if (i) out << ", ";
            append_display(out, x->at(i), max_items);
          }
          if (shown < n) out << ", ... (" << n << " items)";
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
  return as_array() == other.as_array();
}

Value Value::array(Array a) {
  return Value(Storage(std::in_place_index<9>, std::make_shared<const Array>(std::move(a))));
}

Value Value::string_array(const std::vector<std::string>& items) {
  return Value::array(Array::of(items));
}

Value Value::f32_array(const std::vector<float>& items) { return Value::array(Array::of(items)); }

Value Value::i32_array(const std::vector<int32_t>& items) { return Value::array(Array::of(items)); }

template <typename T>
Array Array::of(std::vector<T> items) {
  if constexpr (std::is_same_v<T, std::string>) {
    Strings s;
    std::size_t total = 0;
    for (const auto& item : items) total += item.size();
    s.chars.reserve(total);
    s.ends.reserve(items.size());
    for (const auto& item : items) {
      s.chars += item;
      s.ends.push_back(s.chars.size());
    }
    return Array(Items(std::in_place_index<8>, std::move(s)));
  } else {
    constexpr auto index = static_cast<std::size_t>(value_type_of<T>());
    return Array(Items(std::in_place_index<index>, std::move(items)));
  }
}

template Array Array::of(std::vector<uint8_t>);
template Array Array::of(std::vector<int8_t>);
template Array Array::of(std::vector<uint16_t>);
template Array Array::of(std::vector<int16_t>);
template Array Array::of(std::vector<uint32_t>);
template Array Array::of(std::vector<int32_t>);
template Array Array::of(std::vector<float>);
template Array Array::of(std::vector<bool>);
template Array Array::of(std::vector<std::string>);
template Array Array::of(std::vector<uint64_t>);
template Array Array::of(std::vector<int64_t>);
template Array Array::of(std::vector<double>);

namespace {

template <typename T>
std::vector<T> unpack(const std::vector<Value>& items) {
  std::vector<T> out;
  out.reserve(items.size());
  for (const auto& v : items) out.push_back(v.as<T>());
  return out;
}

}  // namespace

Array Array::from_values(ValueType element, const std::vector<Value>& items) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].type() != element)
      throw GgufError("array of " + std::string(value_type_name(element)) + " holds a " +
                      std::string(value_type_name(items[i].type())) + " at index " + std::to_string(i));
  }
  switch (element) {
    case ValueType::UInt8: return of(unpack<uint8_t>(items));
    case ValueType::Int8: return of(unpack<int8_t>(items));
    case ValueType::UInt16: return of(unpack<uint16_t>(items));
    case ValueType::Int16: return of(unpack<int16_t>(items));
    case ValueType::UInt32: return of(unpack<uint32_t>(items));
    case ValueType::Int32: return of(unpack<int32_t>(items));
    case ValueType::Float32: return of(unpack<float>(items));
    case ValueType::Bool: return of(unpack<bool>(items));
    case ValueType::String: return of(unpack<std::string>(items));
    case ValueType::Array: return Array(Items(std::in_place_index<9>, items));
    case ValueType::UInt64: return of(unpack<uint64_t>(items));
    case ValueType::Int64: return of(unpack<int64_t>(items));
    case ValueType::Float64: return of(unpack<double>(items));
  }
  throw GgufError("unknown array element type " + std::to_string(static_cast<uint32_t>(element)));
}

std::size_t Array::size() const {
  return std::visit(
      [](const auto& x) -> std::size_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Strings>) return x.ends.size();
        else return x.size();
      },
      items_);
}

Value Array::at(std::size_t i) const {
  if (i >= size())
    throw GgufError("array index " + std::to_string(i) + " out of range (" + std::to_string(size()) +
                    " elements)");
  return std::visit(
      [&](const auto& x) -> Value {
        using V = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<V, Strings>) return Value::string(std::string(string_at(i)));
        else if constexpr (std::is_same_v<V, std::vector<Value>>) return x[i];
        else if constexpr (std::is_same_v<V, std::vector<bool>>) return Value::boolean(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<uint8_t>>) return Value::u8(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<int8_t>>) return Value::i8(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<uint16_t>>) return Value::u16(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<int16_t>>) return Value::i16(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<uint32_t>>) return Value::u32(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<int32_t>>) return Value::i32(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<float>>) return Value::f32(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<uint64_t>>) return Value::u64(x[i]);
        else if constexpr (std::is_same_v<V, std::vector<int64_t>>) return Value::i64(x[i]);
        else return Value::f64(x[i]);
      },
      items_);
}

std::string_view Array::string_at(std::size_t i) const {
  const auto* s = std::get_if<Strings>(&items_);
  if (s == nullptr) throw_type_mismatch(ValueType::String, element_type());
  if (i >= s->ends.size())
    throw GgufError("array index " + std::to_string(i) + " out of range (" +
                    std::to_string(s->ends.size()) + " elements)");
  const uint64_t begin = i == 0 ? 0 : s->ends[i - 1];
  return std::string_view(s->chars).substr(begin, s->ends[i] - begin);
}

template <typename T>
std::span<const T> Array::values() const {
  constexpr auto index = static_cast<std::size_t>(value_type_of<T>());
  if (const auto* v = std::get_if<index>(&items_)) return *v;
  throw_type_mismatch(value_type_of<T>(), element_type());
}

template std::span<const uint8_t> Array::values() const;
template std::span<const int8_t> Array::values() const;
template std::span<const uint16_t> Array::values() const;
template std::span<const int16_t> Array::values() const;
template std::span<const uint32_t> Array::values() const;
template std::span<const int32_t> Array::values() const;
template std::span<const float> Array::values() const;
template std::span<const uint64_t> Array::values() const;
template std::span<const int64_t> Array::values() const;
template std::span<const double> Array::values() const;

bool Array::operator==(const Array& other) const {
  if (items_.index() != other.items_.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using V = std::decay_t<decltype(x)>;
        const V& y = std::get<V>(other.items_);
        // Floats compare bitwise so NaN round-trips compare equal.
        if constexpr (std::is_same_v<V, std::vector<float>> || std::is_same_v<V, std::vector<double>>)
          return x.size() == y.size() &&
                 (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof x[0]) == 0);
        else return x == y;
      },
      items_);
}

std::string to_display_string(const Value& v, std::size_t max_items) {
  std::ostringstream out;
  append_display(out, v, max_items);
  return out.str();
}

}  // namespace lamina::gguf
