// tokenizer.json pre-tokenizers.
#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>

#ifdef LAMINA_HAVE_ICU
#include <unicode/uscript.h>
#endif

#include "tokenizer/hf/pipeline.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

constexpr std::string_view kWhere = "pre_tokenizer";
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // '▁'
// GPT-2's word pattern, which ByteLevel applies with use_regex.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior behavior_of(const Json& spec, std::string_view where, Behavior fallback) {
  const std::string name = string_field(spec, "behavior", where, "");
  if (name.empty()) return fallback;
  if (name == "Removed") return Behavior::Removed;
  if (name == "Isolated") return Behavior::Isolated;
  if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::MergedWithNext;
  if (name == "Contiguous") return Behavior::Contiguous;
  fail(where, "unknown behavior '" + name + "'");
}

// The pieces a split keeps, from the matches and gaps of the whole text, as the
// tokenizers library's SplitDelimiterBehavior defines them.
std::vector<ByteRange> apply_behavior(const std::vector<MatchPiece>& pieces, Behavior behavior) {
  std::vector<ByteRange> out;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::Removed:
      for (const MatchPiece& p : pieces) {
        if (!p.is_match) out.push_back(p.range);
      }
      break;
    case Behavior::Isolated:
      for (const MatchPiece& p : pieces) out.push_back(p.range);
      break;
    case Behavior::MergedWithPrevious:
      for (const MatchPiece& p : pieces) {
        if (p.is_match && !previous_match && !out.empty()) {
          out.back().end = p.range.end;
        } else {
          out.push_back(p.range);
        }
        previous_match = p.is_match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->range.begin;
        } else {
          out.push_back(it->range);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    case Behavior::Contiguous:
      for (const MatchPiece& p : pieces) {
        if (p.is_match == previous_match && !out.empty()) {
          out.back().end = p.range.end;
        } else {
          out.push_back(p.range);
        }
        previous_match = p.is_match;
      }
      break;
  }
  return out;
}

// Replaces every piece by the parts `cut` makes of it; a part starting where its piece
// starts keeps the piece's at_origin.
void split_each(std::vector<Piece>& pieces,
                const std::function<std::vector<ByteRange>(std::string_view)>& cut) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    for (const ByteRange& r : cut(piece.text)) {
      if (r.end > r.begin) out.push_back({piece.text.substr(r.begin, r.end - r.begin), piece.at_origin && r.begin == 0});
    }
  }
  pieces = std::move(out);
}

// Each character that `is_delimiter` accepts is a match of its own.
std::vector<MatchPiece> char_matches(std::string_view text, const std::function<bool(char32_t)>& is_delimiter) {
  std::vector<MatchPiece> out;
  std::size_t pos = 0, gap = 0;
  while (pos < text.size()) {
    const std::size_t n = std::min(utf8::length_from_lead(static_cast<unsigned char>(text[pos])), text.size() - pos);
    const std::vector<char32_t> cp = decode_utf8_lossy(text.substr(pos, n));
    if (!cp.empty() && is_delimiter(cp[0])) {
      if (gap < pos) out.push_back({{gap, pos}, false});
      out.push_back({{pos, pos + n}, true});
      gap = pos + n;
    }
    pos += n;
  }
  if (gap < text.size()) out.push_back({{gap, text.size()}, false});
  return out;
}

class RegexSplit final : public PreTokenizer {
 public:
  RegexSplit(std::string_view pattern, RegexDialect dialect, Behavior behavior, bool invert)
      : regex_(pattern, dialect), behavior_(behavior), invert_(invert) {}
  void split(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](std::string_view text) {
      std::vector<MatchPiece> matches;
      split_by_matches(regex_, text, matches);
      if (invert_) {
        for (MatchPiece& m : matches) m.is_match = !m.is_match;
      }
      return apply_behavior(matches, behavior_);
    });
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

class CharSplit final : public PreTokenizer {
 public:
  CharSplit(std::function<bool(char32_t)> is_delimiter, Behavior behavior)
      : is_delimiter_(std::move(is_delimiter)), behavior_(behavior) {}
  void split(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](std::string_view text) { return apply_behavior(char_matches(text, is_delimiter_), behavior_); });
  }

 private:
  std::function<bool(char32_t)> is_delimiter_;
  Behavior behavior_;
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, RegexDialect::Oniguruma);
  }
  void split(std::vector<Piece>& pieces) const override {
    if (add_prefix_space_) {
      for (Piece& p : pieces) {
        if (!p.text.starts_with(' ')) p.text.insert(0, 1, ' ');
      }
    }
    if (regex_) {
      split_each(pieces, [&](std::string_view text) {
        std::vector<MatchPiece> matches;
        split_by_matches(*regex_, text, matches);
        return apply_behavior(matches, Behavior::Isolated);
      });
    }
    for (Piece& p : pieces) {
      std::string mapped;
      mapped.reserve(p.text.size() * 2);
      for (char c : p.text) mapped += byte_to_unicode(static_cast<uint8_t>(c));
      p.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { Always, First, Never };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void split(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      std::string out;
      out.reserve(p.text.size() + replacement_.size());
      for (char c : p.text) {
        if (c == ' ') {
          out += replacement_;
        } else {
          out += c;
        }
      }
      const bool prepend = scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && p.at_origin);
      if (prepend && !out.starts_with(replacement_)) out.insert(0, replacement_);
      p.text = std::move(out);
    }
    if (!split_) return;
    split_each(pieces, [&](std::string_view text) {
      std::vector<MatchPiece> matches;
      std::size_t pos = 0;
      for (std::size_t at = text.find(replacement_); at != std::string_view::npos;
           at = text.find(replacement_, at + replacement_.size())) {
        if (at > pos) matches.push_back({{pos, at}, false});
        matches.push_back({{at, at + replacement_.size()}, true});
        pos = at + replacement_.size();
      }
      if (pos < text.size()) matches.push_back({{pos, text.size()}, false});
      return apply_behavior(matches, Behavior::MergedWithNext);
    });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

#ifdef LAMINA_HAVE_ICU
// Splits where the Unicode script changes, as the tokenizers library's UnicodeScripts:
// kana and the prolonged sound mark count as Han, spaces and unassigned characters
// belong to no script (they join the piece before them), and text before the first
// character with a script is dropped, as there.
class UnicodeScripts final : public PreTokenizer {
 public:
  void split(std::vector<Piece>& pieces) const override {
    split_each(pieces, [](std::string_view text) {
      std::vector<std::size_t> starts;
      std::optional<int> last;
      std::size_t offset = 0;
      for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t n = std::min(utf8::length_from_lead(static_cast<unsigned char>(text[pos])), text.size() - pos);
        const std::vector<char32_t> cp = decode_utf8_lossy(text.substr(pos, n));
        const std::optional<int> script = script_of(cp.empty() ? U'\uFFFD' : cp[0]);
        if (script && last != script) starts.push_back(offset);
        if (script) last = script;
        offset += n;
        pos += n;
      }
      std::vector<ByteRange> out;
      for (std::size_t i = 0; i < starts.size(); ++i) out.push_back({starts[i], i + 1 < starts.size() ? starts[i + 1] : text.size()});
      return out;
    });
  }

 private:
  static std::optional<int> script_of(char32_t cp) {
    if (cp == ' ') return std::nullopt;
    if (cp == 0x30FC) return USCRIPT_HAN;
    UErrorCode error = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(static_cast<UChar32>(cp), &error);
    if (U_FAILURE(error) || script == USCRIPT_UNKNOWN) return std::nullopt;
    if (script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA) return USCRIPT_HAN;
    return script;
  }
};
#endif

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void split(std::vector<Piece>& pieces) const override {
    for (const auto& step : steps_) step->split(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

bool is_punctuation(char32_t cp) { return (cp < 0x80 && std::ispunct(static_cast<int>(cp))) || classify(cp).punctuation; }

std::unique_ptr<PreTokenizer> make_metaspace(const Json& spec, std::string_view where) {
  std::string replacement = string_field(spec, "replacement", where, kSpaceMark);
  if (decode_utf8_lossy(replacement).size() != 1) fail(where, "\"replacement\" must be one character");
  PrependScheme scheme = PrependScheme::Always;
  if (spec.contains("prepend_scheme") && !spec["prepend_scheme"].is_null()) {
    const std::string name = string_field(spec, "prepend_scheme", where);
    if (name == "always") {
      scheme = PrependScheme::Always;
    } else if (name == "first") {
      scheme = PrependScheme::First;
    } else if (name == "never") {
      scheme = PrependScheme::Never;
    } else {
      fail(where, "unknown prepend_scheme '" + name + "'");
    }
  } else if (!bool_field(spec, "add_prefix_space", true, where)) {
    scheme = PrependScheme::Never;  // the field files written before prepend_scheme carry
  }
  return std::make_unique<Metaspace>(std::move(replacement), scheme, bool_field(spec, "split", true, where));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, kWhere);
  const std::string where = std::string(kWhere) + " " + type;
  if (type == "Split") {
    bool is_regex = false;
    const std::string pattern = pattern_field(spec, where, is_regex);
    return std::make_unique<RegexSplit>(pattern, is_regex ? RegexDialect::Oniguruma : RegexDialect::Literal,
                                        behavior_of(spec, where, Behavior::Removed),
                                        bool_field(spec, "invert", false, where));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(bool_field(spec, "add_prefix_space", true, where),
                                       bool_field(spec, "use_regex", true, where));
  }
  if (type == "Metaspace") return make_metaspace(spec, where);
  if (type == "Whitespace") {
    // The tokenizers library runs this one with Rust's regex crate, not Oniguruma.
    return std::make_unique<RegexSplit>(R"(\w+|[^\w\s]+)", RegexDialect::RustRegex, Behavior::Removed, true);
  }
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(is_whitespace, Behavior::Removed);
  if (type == "Punctuation") {
    return std::make_unique<CharSplit>(is_punctuation, behavior_of(spec, where, Behavior::Isolated));
  }
  if (type == "Digits") {
    const bool individual = bool_field(spec, "individual_digits", false, where);
    return std::make_unique<CharSplit>([](char32_t cp) { return classify(cp).number; },
                                       individual ? Behavior::Isolated : Behavior::Contiguous);
  }
  if (type == "CharDelimiterSplit") {
    const std::vector<char32_t> delimiter = decode_utf8_lossy(string_field(spec, "delimiter", where));
    if (delimiter.size() != 1) fail(where, "\"delimiter\" must be one character");
    const char32_t d = delimiter[0];
    return std::make_unique<CharSplit>([d](char32_t cp) { return cp == d; }, Behavior::Removed);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(std::make_unique<CharSplit>(is_whitespace, Behavior::Removed));
    steps.push_back(std::make_unique<CharSplit>(is_punctuation, Behavior::Isolated));
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "UnicodeScripts") {
#ifdef LAMINA_HAVE_ICU
    return std::make_unique<UnicodeScripts>();
#else
    // Each character's script comes from ICU, which this build was made without.
    fail(where, "needs ICU, which this build of lamina lacks");
#endif
  }
  if (type == "Sequence") {
    return std::make_unique<SequencePreTokenizer>(
        make_steps<PreTokenizer>(spec, "pretokenizers", where, make_pre_tokenizer));
  }
  fail(kWhere, "unknown type '" + type + "'");
}

}  // namespace lamina::model::detail::hf
