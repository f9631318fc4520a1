// The tokenizer.json models besides BPE: Unigram, WordPiece and WordLevel.
#include <cmath>
#include <cstdio>
#include <limits>

#include "tokenizer/hf/models.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

int32_t required_token(const VocabTable& vocab, const std::string& text, std::string_view where, const char* key) {
  const int32_t id = vocab.find(text);
  if (id < 0) fail(where, std::string(key) + " '" + text + "' is not in the vocab");
  return id;
}

std::size_t char_length(std::string_view text, std::size_t pos) {
  return std::min(utf8::length_from_lead(static_cast<unsigned char>(text[pos])), text.size() - pos);
}

// Greedy longest match from the left, with the prefix on pieces after the first; a
// word with a piece that matches nothing, or longer than the limit, is one unknown token.
class WordPiece final : public Model {
 public:
  explicit WordPiece(const Json& spec) {
    constexpr std::string_view kWhere = "model WordPiece";
    vocab_ = vocab_from_object(spec.value("vocab", Json()), kWhere);
    unk_ = required_token(vocab_, string_field(spec, "unk_token", kWhere, "[UNK]"), kWhere, "unk_token");
    prefix_ = string_field(spec, "continuing_subword_prefix", kWhere, "##");
    const Json& limit = spec.value("max_input_chars_per_word", Json(100));
    max_chars_ = limit.is_number_unsigned() ? limit.get<std::size_t>() : 100;
  }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (decode_utf8_lossy(word).size() > max_chars_) {
      out.push_back(unk_);
      return;
    }
    std::vector<int32_t> pieces;
    std::string candidate;
    for (std::size_t start = 0; start < word.size();) {
      std::vector<std::size_t> ends;  // character boundaries after start
      for (std::size_t p = start; p < word.size(); p += char_length(word, p)) ends.push_back(p + char_length(word, p));
      int32_t found = kNoToken;
      std::size_t found_end = start;
      for (auto it = ends.rbegin(); it != ends.rend(); ++it) {
        candidate.assign(start > 0 ? prefix_ : std::string());
        candidate.append(word.substr(start, *it - start));
        found = vocab_.find(candidate);
        if (found >= 0) {
          found_end = *it;
          break;
        }
      }
      if (found < 0) {
        out.push_back(unk_);
        return;
      }
      pieces.push_back(found);
      start = found_end;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }

 private:
  int32_t unk_ = kNoToken;
  std::string prefix_;
  std::size_t max_chars_ = 100;
};

class WordLevel final : public Model {
 public:
  explicit WordLevel(const Json& spec) {
    constexpr std::string_view kWhere = "model WordLevel";
    vocab_ = vocab_from_object(spec.value("vocab", Json()), kWhere);
    const std::string unk = string_field(spec, "unk_token", kWhere, "");
    if (!unk.empty()) unk_ = required_token(vocab_, unk, kWhere, "unk_token");
  }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    const int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_ >= 0) {
      out.push_back(unk_);
    } else {
      throw TokenizerError("the WordLevel model has no token for '" + std::string(word) + "' and no unk_token");
    }
  }

 private:
  int32_t unk_ = kNoToken;
};

// The best-scoring segmentation (Viterbi over every vocabulary piece that starts at each
// character); characters no piece covers are unknown, scored below every piece.
class Unigram final : public Model {
 public:
  explicit Unigram(const Json& spec) {
    constexpr std::string_view kWhere = "model Unigram";
    const auto it = spec.find("vocab");
    if (it == spec.end() || !it->is_array()) fail(kWhere, "\"vocab\" is not a list");
    std::size_t bytes = 0;
    for (const Json& e : *it) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
        fail(kWhere, "a vocab entry is not [\"piece\", score]");
      bytes += e[0].get_ref<const std::string&>().size();
    }
    vocab_.texts.reserve(it->size(), bytes);
    for (const Json& e : *it) {
      const std::string& piece = e[0].get_ref<const std::string&>();
      vocab_.texts.push_back(piece);
      scores_.push_back(e[1].get<double>());
      max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
    }
    // A piece listed twice is found under its last id, as the tokenizers library does.
    vocab_.index.build(StringTable{});
    for (std::size_t id = vocab_.texts.size(); id-- > 0;) vocab_.index.insert(static_cast<int32_t>(id), vocab_.texts);
    if (spec.contains("unk_id") && spec["unk_id"].is_number_unsigned()) {
      const auto id = spec["unk_id"].get<uint64_t>();
      if (id >= vocab_.texts.size()) fail(kWhere, "unk_id is outside the vocab");
      unk_ = static_cast<int32_t>(id);
    }
    byte_fallback_ = bool_field(spec, "byte_fallback", false, kWhere);
    min_score_ = scores_.empty() ? 0.0 : *std::min_element(scores_.begin(), scores_.end());
  }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (word.empty()) return;
    struct Node {
      double score = 0.0;
      std::size_t start = 0;
      int32_t id = kNoToken;
      bool reached = false;
    };
    constexpr double kUnknownPenalty = 10.0;
    const double unk_score = min_score_ - kUnknownPenalty;
    std::vector<Node> best(word.size() + 1);
    best[0].reached = true;
    auto offer = [&](std::size_t start, std::size_t end, int32_t id, double score) {
      Node& node = best[end];
      const double total = best[start].score + score;
      if (!node.reached || total > node.score) node = Node{total, start, id, true};
    };
    for (std::size_t start = 0; start < word.size();) {
      const std::size_t first = char_length(word, start);
      bool single_char_piece = false;
      for (std::size_t end = start + first; end <= word.size() && end - start <= max_piece_bytes_;
           end += end < word.size() ? char_length(word, end) : 1) {
        const int32_t id = vocab_.find(word.substr(start, end - start));
        if (id >= 0) {
          offer(start, end, id, scores_[static_cast<std::size_t>(id)]);
          if (end - start == first) single_char_piece = true;
        }
        if (end == word.size()) break;
      }
      if (!single_char_piece) offer(start, start + first, unk_, unk_score);
      start += first;
    }
    // Back from the end; runs of unknown characters form one piece.
    std::vector<std::pair<std::size_t, std::size_t>> spans;  // [start, end) of each token
    std::vector<int32_t> ids;
    for (std::size_t end = word.size(); end > 0;) {
      const Node& node = best[end];
      const bool unknown = node.id == unk_ && unk_ >= 0 ? true : node.id == kNoToken;
      if (unknown && !ids.empty() && ids.back() == kUnknownRun) {
        spans.back().first = node.start;
      } else {
        spans.push_back({node.start, end});
        ids.push_back(unknown ? kUnknownRun : node.id);
      }
      end = node.start;
    }
    for (std::size_t i = ids.size(); i-- > 0;) {
      if (ids[i] != kUnknownRun) {
        out.push_back(ids[i]);
        continue;
      }
      const std::string_view piece = word.substr(spans[i].first, spans[i].second - spans[i].first);
      const int32_t whole = vocab_.find(piece);
      if (whole >= 0) {
        out.push_back(whole);
      } else if (byte_fallback_ && bytes_known(piece)) {
        for (char b : piece) out.push_back(byte_id(b));
      } else if (unk_ >= 0) {
        out.push_back(unk_);
      } else {
        throw TokenizerError("the Unigram model has no piece for '" + std::string(piece) + "' and no unk_id");
      }
    }
  }

 private:
  static constexpr int32_t kUnknownRun = -2;

  int32_t byte_id(char b) const {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(b));
    return vocab_.find(name);
  }
  bool bytes_known(std::string_view piece) const {
    return std::all_of(piece.begin(), piece.end(), [&](char b) { return byte_id(b) >= 0; });
  }

  std::vector<double> scores_;
  std::size_t max_piece_bytes_ = 0;
  double min_score_ = 0.0;
  int32_t unk_ = kNoToken;
  bool byte_fallback_ = false;
};

}  // namespace

std::unique_ptr<Model> make_model(const Json& spec) {
  const std::string type = spec.is_object() && spec.contains("type") ? type_of(spec, "model")
                           : spec.is_object() && spec.contains("merges") ? "BPE"
                                                                          : type_of(spec, "model");
  if (type == "BPE") return make_bpe(spec);
  if (type == "Unigram") return std::make_unique<Unigram>(spec);
  if (type == "WordPiece") return std::make_unique<WordPiece>(spec);
  if (type == "WordLevel") return std::make_unique<WordLevel>(spec);
  fail("model", "unknown type '" + type + "'");
}

}  // namespace lamina::model::detail::hf
