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

#include "utf8.h"

namespace lamina::model {

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
    std::size_t safe = utf8::complete_prefix(text);
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
