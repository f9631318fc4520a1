// Streaming generated text safely: never show half a UTF-8 character, and
// hold back any end of the text that may still grow into a stop string.
// Shared by the generation loop and the serving engine.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lamina::model {

// Length of the longest prefix of `s` that does not end inside a UTF-8 sequence.
inline std::size_t complete_utf8_prefix(std::string_view s) {
  std::size_t i = s.size();
  std::size_t back = 0;
  while (i > 0 && back < 4) {
    const auto c = static_cast<unsigned char>(s[i - 1]);
    if ((c & 0xC0) != 0x80) {
      const std::size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
      return back + 1 >= need ? s.size() : i - 1;
    }
    --i;
    ++back;
  }
  return s.size();  // stray continuation bytes: nothing to wait for
}

// Text between what was shown and what may still turn into a stop string.
class StopFilter {
 public:
  explicit StopFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Appends a piece; returns true when a stop string completed (the text is
  // then cut before it).
  bool append(std::string_view piece, std::string& text) const {
    text.append(piece);
    for (const auto& stop : stops_) {
      if (stop.empty()) continue;
      // Only the region that could contain a new match needs a look.
      const std::size_t from = text.size() > piece.size() + stop.size() ? text.size() - piece.size() - stop.size() : 0;
      const std::size_t at = text.find(stop, from);
      if (at != std::string::npos) {
        text.resize(at);
        return true;
      }
    }
    return false;
  }

  // How much of `text` can be shown: complete UTF-8, and not a suffix that
  // starts some stop string.
  std::size_t safe_length(std::string_view text) const {
    std::size_t safe = complete_utf8_prefix(text);
    for (const auto& stop : stops_) {
      for (std::size_t k = std::min(stop.size() - (stop.empty() ? 0 : 1), safe); k > 0; --k) {
        if (text.substr(safe - k, k) == std::string_view(stop).substr(0, k)) {
          safe -= k;
          break;
        }
      }
    }
    return safe;
  }

 private:
  std::vector<std::string> stops_;
};

}  // namespace lamina::model
