// A GGUF metadata value: one of the 13 value types, arrays nesting freely.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lamina/gguf/types.h"

namespace lamina::gguf {

class Value;

// An array holds elements of one type; arrays of arrays are allowed.
struct Array {
  ValueType element_type = ValueType::UInt8;
  std::vector<Value> items;
};

class Value {
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
  static Value array(Array a) {
    return Value(Storage(std::in_place_index<9>, std::make_shared<const Array>(std::move(a))));
  }
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

// A human-readable rendering: strings quoted, arrays shortened to
// `max_items` elements (0 = all).
std::string to_display_string(const Value& v, std::size_t max_items = 0);

}  // namespace lamina::gguf
