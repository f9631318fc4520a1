// A GGUF metadata value: one of the 13 value types, arrays nesting freely.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lamina/gguf/types.h"
#include "lamina/gguf/export.h"

namespace lamina::gguf {

class Array;

class LAMINA_GGUF_API Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, std::shared_ptr<const Array>, uint64_t, int64_t,
                               double>;

  Value() : storage_(uint8_t{0}) {}
  static Value u8(uint8_t v) { return Value(Storage(std::in_place_index<0>, v)); }
  static Value i8(int8_t v) { return Value(Storage(std::in_place_index<1>, v)); }
  static Value u16(uint16_t v) { return Value(Storage(std::in_place_index<2>, v)); }
  static Value i16(int16_t v) { return Value(Storage(std::in_place_index<3>, v)); }
  static Value u32(uint32_t v) { return Value(Storage(std::in_place_index<4>, v)); }
  static Value i32(int32_t v) { return Value(Storage(std::in_place_index<5>, v)); }
  static Value f32(float v) { return Value(Storage(std::in_place_index<6>, v)); }
  static Value boolean(bool v) { return Value(Storage(std::in_place_index<7>, v)); }
  static Value string(std::string v) {
    return Value(Storage(std::in_place_index<8>, std::move(v)));
  }
  static Value array(Array a);
  static Value u64(uint64_t v) { return Value(Storage(std::in_place_index<10>, v)); }
  static Value i64(int64_t v) { return Value(Storage(std::in_place_index<11>, v)); }
  static Value f64(double v) { return Value(Storage(std::in_place_index<12>, v)); }

  // Convenience builders for the common arrays.
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);

  // The variant index equals the GGUF value type id.
  ValueType type() const { return static_cast<ValueType>(storage_.index()); }
  const Storage& storage() const { return storage_; }

  // Typed access: throws GgufError naming both types on a mismatch.
  template <typename T>
  const T& as() const;
  const std::string& as_string() const { return as<std::string>(); }
  const Array& as_array() const;

  // Integer of any integer type widened to 64 bits (bool excluded); throws
  // on a non-integer type or when the value does not fit.
  int64_t as_int64() const;
  uint64_t as_uint64() const;
  // Float32 or Float64 as double.
  double as_double() const;

  bool operator==(const Value& other) const;

 private:
  explicit Value(Storage s) : storage_(std::move(s)) {}
  Storage storage_;
};

// The elements of an array, all of one type. Scalars and strings are stored
// packed: a 150k-token vocabulary costs its text and one offset per token,
// not a Value per element. Arrays of arrays hold their elements as Values.
class LAMINA_GGUF_API Array {
 public:
  Array() = default;  // empty, of uint8

  // Scalar elements (uint8 ... float64, bool) or std::string.
  template <typename T>
  static Array of(std::vector<T> items);
  // Elements given as Values; each must be of type `element`. Throws GgufError
  // naming the first one that is not.
  static Array from_values(ValueType element, const std::vector<Value>& items);

  ValueType element_type() const { return static_cast<ValueType>(items_.index()); }
  std::size_t size() const;
  bool empty() const { return size() == 0; }

  // Any element as a Value (strings copied). Throws GgufError when out of range.
  Value at(std::size_t i) const;
  // Element i of a string array; throws GgufError on another element type or out of range.
  std::string_view string_at(std::size_t i) const;
  // The elements of a numeric array (not bool) whose element type is T;
  // throws GgufError on another element type.
  template <typename T>
  std::span<const T> values() const;

  bool operator==(const Array& other) const;

 private:
  struct Strings {
    std::string chars;           // all strings back to back
    std::vector<uint64_t> ends;  // end of string i in chars
    bool operator==(const Strings&) const = default;
  };
  // The variant index equals the element's GGUF value type id.
  using Items = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                             std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                             std::vector<float>, std::vector<bool>, Strings, std::vector<Value>,
                             std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>>;
  explicit Array(Items items) : items_(std::move(items)) {}
  friend class Parser;
  Items items_;
};

// A human-readable rendering: strings quoted, arrays shortened to
// `max_items` elements (0 = all).
LAMINA_GGUF_API std::string to_display_string(const Value& v, std::size_t max_items = 0);

}  // namespace lamina::gguf
