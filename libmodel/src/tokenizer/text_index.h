// Internal: an open-addressing hash index from a string to its position in a list of
// strings the caller owns. Lookups take string_views and never allocate.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_table.h"

namespace lamina::model::detail {

class TextIndex {
 public:
  // Indexes texts[i] under i; empty strings are skipped. Returns the first position whose
  // text repeats an earlier one (that position is not indexed), or -1.
  int32_t build(const StringTable& texts) {
    std::size_t capacity = 16;
    while (capacity * 3 < texts.size() * 4) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    used_ = 0;
    int32_t first_duplicate = -1;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (texts[i].empty()) continue;
      if (!insert(static_cast<int32_t>(i), texts) && first_duplicate < 0) {
        first_duplicate = static_cast<int32_t>(i);
      }
    }
    return first_duplicate;
  }

  // Adds texts[id] (the list may have grown since build()); false if the text is present.
  // The index keeps at most three quarters of its slots used (linear probing stays short).
  bool insert(int32_t id, const StringTable& texts) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow(texts);
    const std::string_view text = texts[static_cast<std::size_t>(id)];
    const uint64_t h = hash(text);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{static_cast<uint32_t>(h), id};
        ++used_;
        return true;
      }
      if (s.hash == static_cast<uint32_t>(h) && texts[static_cast<std::size_t>(s.id)] == text) {
        return false;
      }
    }
  }

  // Position of `text`, or -1.
  int32_t find(std::string_view text, const StringTable& texts) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(text);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == static_cast<uint32_t>(h) && texts[static_cast<std::size_t>(s.id)] == text) {
        return s.id;
      }
    }
  }

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t id = -1;
  };

  static uint64_t hash(std::string_view text) { return std::hash<std::string_view>{}(text); }

  void grow(const StringTable& texts) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    used_ = 0;
    for (const Slot& s : old) {
      if (s.id >= 0) insert(s.id, texts);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t used_ = 0;
};

}  // namespace lamina::model::detail
