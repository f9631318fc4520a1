// Internal: many short strings stored back to back. A 150k-token vocabulary costs its text
// and one offset per token instead of a std::string (and often a heap block) per token.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::model::detail {

class StringTable {
 public:
  void reserve(std::size_t n_strings, std::size_t n_bytes) {
    ends_.reserve(n_strings);
    chars_.reserve(n_bytes);
  }
  void push_back(std::string_view s) {
    chars_.append(s);
    ends_.push_back(chars_.size());
  }

  // Drops the spare capacity left by growing one string at a time.
  void shrink_to_fit() {
    chars_.shrink_to_fit();
    ends_.shrink_to_fit();
  }

  std::size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(chars_).substr(begin, ends_[i] - begin);
  }
  std::string_view at(std::size_t i) const {
    if (i >= ends_.size()) throw std::out_of_range("string table index " + std::to_string(i));
    return (*this)[i];
  }

 private:
  std::string chars_;
  std::vector<std::size_t> ends_;  // end of string i in chars_
};

}  // namespace lamina::model::detail
