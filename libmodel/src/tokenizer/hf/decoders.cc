// tokenizer.json decoders and post-processors.
#include "tokenizer/hf/pipeline.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

constexpr std::string_view kWhere = "decoder";

// Bytes as text: invalid sequences become U+FFFD (what a whole-text decode returns),
// unless the mode keeps raw bytes for a caller that joins pieces itself.
std::string finish_bytes(std::string bytes, const DecodeMode& mode) {
  return mode.raw_bytes ? bytes : sanitize_utf8(bytes);
}

class ByteLevelDecoder final : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      // A token with a character outside the byte alphabet is taken as its own UTF-8.
      const std::vector<char32_t> cps = decode_utf8_lossy(t);
      const bool mapped = std::all_of(cps.begin(), cps.end(), [](char32_t cp) { return unicode_to_byte(cp) >= 0; });
      if (!mapped) {
        bytes += t;
        continue;
      }
      for (char32_t cp : cps) bytes += static_cast<char>(unicode_to_byte(cp));
    }
    tokens.assign(1, finish_bytes(std::move(bytes), mode));
  }
};

std::optional<char> byte_token(std::string_view t) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>' || hex(t[3]) < 0 || hex(t[4]) < 0) return std::nullopt;
  return static_cast<char>(hex(t[3]) * 16 + hex(t[4]));
}

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    std::vector<std::string> out;
    std::string bytes;
    std::size_t n_bytes = 0;
    auto flush = [&] {
      if (n_bytes == 0) return;
      if (mode.raw_bytes || sanitize_utf8(bytes) == bytes) {
        out.push_back(bytes);
      } else {
        // Bytes that are not UTF-8 become one U+FFFD each.
        for (std::size_t i = 0; i < n_bytes; ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      n_bytes = 0;
    };
    for (std::string& t : tokens) {
      if (const std::optional<char> b = byte_token(t)) {
        bytes += *b;
        ++n_bytes;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens, const DecodeMode&) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from each
// token. In a continuation the text's start is elsewhere, so nothing is removed there.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, std::size_t start, std::size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    for (std::string& t : tokens) {
      std::vector<char32_t> cps = decode_utf8_lossy(t);
      std::size_t begin = 0, end = cps.size();
      for (std::size_t i = 0; !mode.continuation && i < start_ && begin < end && cps[begin] == content_; ++i) ++begin;
      for (std::size_t i = 0; i < stop_ && end > begin && cps[end - 1] == content_; ++i) --end;
      std::string out;
      for (std::size_t i = begin; i < end; ++i) utf8::append(out, cps[i]);
      t = std::move(out);
    }
  }

 private:
  char32_t content_;
  std::size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string_view pattern, bool is_regex, std::string content)
      : regex_(pattern, is_regex ? RegexDialect::Oniguruma : RegexDialect::Literal), content_(std::move(content)) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode&) const override {
    for (std::string& t : tokens) t = replace_all(regex_, t, content_);
  }

 private:
  Regex regex_;
  std::string content_;
};

// The replacement character becomes a space, except in the text's first token, where
// (unless nothing was prepended) it disappears.
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepends) : replacement_(std::move(replacement)), prepends_(prepends) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const bool drop = i == 0 && prepends_ && !mode.continuation;
      std::string out;
      const std::string& t = tokens[i];
      for (std::size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!drop) out += ' ';
          pos += replacement_.size();
        } else {
          out += t[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool prepends_;
};

// `text` with every occurrence of `from` (not empty) replaced by `to`.
std::string replace_text(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  std::size_t pos = 0;
  for (std::size_t at = text.find(from); at != std::string_view::npos; at = text.find(from, pos)) {
    out.append(text.substr(pos, at - pos));
    out.append(to);
    pos = at + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

// BERT's detokenization clean-up of spaces before punctuation and contractions.
std::string cleanup_spaces(std::string text) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},         {" ,", ","},   {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  for (const auto& [from, to] : kRules) text = replace_text(text, from, to);
  return text;
}

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0 || mode.continuation) {
        if (t.starts_with(prefix_)) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, 1, ' ');
        }
      }
      if (cleanup_) t = cleanup_spaces(std::move(t));
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const bool last = i + 1 == tokens.size() && !mode.continuation;
      tokens[i] = replace_text(tokens[i], suffix_, last ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

class CtcDecoder final : public Decoder {
 public:
  CtcDecoder(std::string pad, std::string delimiter, bool cleanup)
      : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode&) const override {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;
      std::string t = replace_text(tokens[i], pad_, "");
      if (cleanup_) t = replace_text(cleanup_spaces(std::move(t)), delimiter_, " ");
      if (!t.empty()) out.push_back(std::move(t));
    }
    tokens = std::move(out);
  }

 private:
  std::string pad_, delimiter_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const override {
    for (const auto& step : steps_) step->decode(tokens, mode);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

char32_t one_char(const Json& spec, const char* key, std::string_view where, std::string_view fallback) {
  const std::vector<char32_t> cps = decode_utf8_lossy(string_field(spec, key, where, fallback));
  if (cps.size() != 1) fail(where, std::string("\"") + key + "\" must be one character");
  return cps[0];
}

std::size_t count_field(const Json& spec, const char* key, std::string_view where) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return 0;
  if (!it->is_number_unsigned()) fail(where, std::string("\"") + key + "\" is not a count");
  return it->get<std::size_t>();
}

// --- post-processors ---

// Every post-processor that changes ids puts tokens before and after the sequence.
class TemplateProcessor final : public PostProcessor {
 public:
  TemplateProcessor(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }
  // This one applied after `first`: one template.
  void follow(const TemplateProcessor& first) {
    before_.insert(before_.end(), first.before_.begin(), first.before_.end());
    after_.insert(after_.begin(), first.after_.begin(), first.after_.end());
  }

 private:
  std::vector<int32_t> before_, after_;
};

int32_t token_id_field(const Json& pair, std::string_view where, const char* key) {
  // BertProcessing and RobertaProcessing store ["text", id].
  if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_unsigned())
    fail(where, std::string("\"") + key + "\" is not [\"token\", id]");
  return pair[1].get<int32_t>();
}

std::unique_ptr<TemplateProcessor> make_template(const Json& spec, std::string_view where) {
  const auto single = spec.find("single");
  if (single == spec.end() || !single->is_array()) fail(where, "has no \"single\" template");
  const Json& specials = spec.value("special_tokens", Json::object());
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (const Json& item : *single) {
    if (item.contains("Sequence")) {
      if (seen_sequence) fail(where, "the single template has two sequences");
      seen_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken") || !item["SpecialToken"].contains("id"))
      fail(where, "a template item is neither a Sequence nor a SpecialToken");
    const std::string name = item["SpecialToken"]["id"].get<std::string>();
    const auto entry = specials.find(name);
    if (entry == specials.end() || !entry->contains("ids") || !(*entry)["ids"].is_array())
      fail(where, "special token '" + name + "' has no ids");
    for (const Json& id : (*entry)["ids"]) {
      if (!id.is_number_unsigned()) fail(where, "special token '" + name + "' has an id that is not a number");
      (seen_sequence ? after : before).push_back(id.get<int32_t>());
    }
  }
  if (!seen_sequence) fail(where, "the single template has no sequence");
  return std::make_unique<TemplateProcessor>(std::move(before), std::move(after));
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, kWhere);
  const std::string where = std::string(kWhere) + " " + type;
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(one_char(spec, "content", where, " "), count_field(spec, "start", where),
                                          count_field(spec, "stop", where));
  }
  if (type == "Replace") {
    bool is_regex = false;
    const std::string pattern = pattern_field(spec, where, is_regex);
    return std::make_unique<ReplaceDecoder>(pattern, is_regex, string_field(spec, "content", where));
  }
  if (type == "Metaspace") {
    const std::string replacement = string_field(spec, "replacement", where, "\xE2\x96\x81");
    bool prepends = bool_field(spec, "add_prefix_space", true, where);
    if (spec.contains("prepend_scheme") && spec["prepend_scheme"].is_string())
      prepends = spec["prepend_scheme"].get<std::string>() != "never";
    return std::make_unique<MetaspaceDecoder>(replacement, prepends);
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(string_field(spec, "prefix", where, "##"),
                                              bool_field(spec, "cleanup", true, where));
  }
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(string_field(spec, "suffix", where, "</w>"));
  if (type == "CTC") {
    return std::make_unique<CtcDecoder>(string_field(spec, "pad_token", where, "<pad>"),
                                        string_field(spec, "word_delimiter_token", where, "|"),
                                        bool_field(spec, "cleanup", true, where));
  }
  if (type == "Sequence") {
    return std::make_unique<SequenceDecoder>(make_steps<Decoder>(spec, "decoders", where, make_decoder));
  }
  fail(kWhere, "unknown type '" + type + "'");
}

namespace {

// Every post-processor that changes ids is a template of tokens around the sequence;
// nullptr for one that changes none.
std::unique_ptr<TemplateProcessor> make_processor(const Json& spec) {
  constexpr std::string_view kPost = "post_processor";
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, kPost);
  const std::string where = std::string(kPost) + " " + type;
  // ByteLevel only trims offsets, which ids do not carry.
  if (type == "ByteLevel") return nullptr;
  if (type == "TemplateProcessing") return make_template(spec, where);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return std::make_unique<TemplateProcessor>(std::vector<int32_t>{token_id_field(spec.value("cls", Json()), where, "cls")},
                                               std::vector<int32_t>{token_id_field(spec.value("sep", Json()), where, "sep")});
  }
  if (type == "Sequence") {
    // Templates applied in turn make one template.
    auto combined = std::make_unique<TemplateProcessor>(std::vector<int32_t>{}, std::vector<int32_t>{});
    for (auto& next : make_steps<TemplateProcessor>(spec, "processors", where, make_processor)) {
      next->follow(*combined);
      combined = std::move(next);
    }
    return combined;
  }
  fail(kPost, "unknown type '" + type + "'");
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const Json& spec) { return make_processor(spec); }

}  // namespace lamina::model::detail::hf
