// tokenizer.json normalizers.
#include <functional>

#include "tokenizer/hf/pipeline.h"
#include "tokenizer/hf/precompiled.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

constexpr std::string_view kWhere = "normalizer";

// Rust's char::to_lowercase: the simple mapping, except U+0130 which lowers to two.
void append_lower(std::string& out, char32_t cp) {
  if (cp == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  utf8::append(out, to_lower(cp));
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : decode_utf8_lossy(text)) append_lower(out, cp);
  return out;
}

// Keeps the characters `keep` accepts, each written as `map` says.
std::string filter_map(std::string_view text, const std::function<bool(char32_t)>& keep,
                       const std::function<char32_t(char32_t)>& map = nullptr) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : decode_utf8_lossy(text)) {
    if (keep(cp)) utf8::append(out, map ? map(cp) : cp);
  }
  return out;
}

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = normalize_unicode(text, form_); }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = lowercase(text); }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    const std::vector<char32_t> cps = decode_utf8_lossy(text);
    std::size_t begin = 0, end = cps.size();
    while (left_ && begin < end && is_whitespace(cps[begin])) ++begin;
    while (right_ && end > begin && is_whitespace(cps[end - 1])) --end;
    std::string out;
    for (std::size_t i = begin; i < end; ++i) utf8::append(out, cps[i]);
    text = std::move(out);
  }

 private:
  bool left_, right_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    text = filter_map(text, [](char32_t cp) { return !classify(cp).mark; });
  }
};

class Replace final : public Normalizer {
 public:
  Replace(std::string_view pattern, bool is_regex, std::string content)
      : regex_(pattern, is_regex ? RegexDialect::Oniguruma : RegexDialect::Literal),
        content_(std::move(content)) {}
  void normalize(std::string& text) const override { text = replace_all(regex_, text, content_); }

 private:
  Regex regex_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_chars_(chinese_chars), strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  void normalize(std::string& text) const override {
    if (clean_text_) {
      text = filter_map(
          text,
          [](char32_t cp) {
            if (cp == 0 || cp == kReplacementChar) return false;
            if (cp == '\t' || cp == '\n' || cp == '\r') return true;
            const CharClass c = classify(cp);
            return !c.control && !c.unassigned;
          },
          [](char32_t cp) { return is_whitespace(cp) ? U' ' : cp; });
    }
    if (chinese_chars_) {
      std::string out;
      for (char32_t cp : decode_utf8_lossy(text)) {
        if (is_chinese_char(cp)) {
          out += ' ';
          utf8::append(out, cp);
          out += ' ';
        } else {
          utf8::append(out, cp);
        }
      }
      text = std::move(out);
    }
    if (strip_accents_) {
      text = filter_map(normalize_unicode(text, NormalForm::NFD),
                        [](char32_t cp) { return !classify(cp).nonspacing_mark; });
    }
    if (lowercase_) text = lowercase(text);
  }

 private:
  bool clean_text_, chinese_chars_, strip_accents_, lowercase_;
};

// Removes the control characters SentencePiece's NMT rules drop and turns the
// space-like ones into spaces.
class Nmt final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    text = filter_map(
        text,
        [](char32_t cp) {
          return !((cp >= 0x01 && cp <= 0x08) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) ||
                   cp == 0x7F || cp == 0x8F || cp == 0x9F);
        },
        [](char32_t cp) {
          const bool space = cp == 0x09 || cp == 0x0A || cp == 0x0C || cp == 0x0D || cp == 0x1680 ||
                             (cp >= 0x200B && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 ||
                             cp == 0x2581 || cp == 0xFEFF || cp == 0xFFFD;
          return space ? U' ' : cp;
        });
  }
};

class ByteLevelNormalizer final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::string out;
    for (char c : text) out += byte_to_unicode(static_cast<uint8_t>(c));
    text = std::move(out);
  }
};

class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(const std::string& base64) : map_(base64) {}
  void normalize(std::string& text) const override { text = map_.normalize(text); }

 private:
  PrecompiledCharsMap map_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, kWhere);
  const std::string where = std::string(kWhere) + " " + type;
  if (type == "NFC") return std::make_unique<UnicodeForm>(NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Nmt") return std::make_unique<Nmt>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Strip") {
    return std::make_unique<Strip>(bool_field(spec, "strip_left", true, where),
                                   bool_field(spec, "strip_right", true, where));
  }
  if (type == "Replace") {
    bool is_regex = false;
    const std::string pattern = pattern_field(spec, where, is_regex);
    return std::make_unique<Replace>(pattern, is_regex, string_field(spec, "content", where));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(string_field(spec, "prepend", where));
  if (type == "BertNormalizer") {
    const bool lower = bool_field(spec, "lowercase", true, where);
    return std::make_unique<BertNormalizer>(bool_field(spec, "clean_text", true, where),
                                            bool_field(spec, "handle_chinese_chars", true, where),
                                            bool_field(spec, "strip_accents", lower, where), lower);
  }
  if (type == "Precompiled") {
    const std::string map = string_field(spec, "precompiled_charsmap", where, "");
    // An empty map normalizes nothing (what the converters write for no rules).
    if (map.empty()) return std::make_unique<SequenceNormalizer>(std::vector<std::unique_ptr<Normalizer>>{});
    return std::make_unique<PrecompiledNormalizer>(map);
  }
  if (type == "Sequence") {
    return std::make_unique<SequenceNormalizer>(make_steps<Normalizer>(spec, "normalizers", where, make_normalizer));
  }
  fail(kWhere, "unknown type '" + type + "'");
}

}  // namespace lamina::model::detail::hf
