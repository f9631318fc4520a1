// The tokenizer.json BPE model: merges applied by rank, byte fallback, unknown-token
// fusing, continuing-subword prefix and end-of-word suffix, ignore_merges.
#include <algorithm>
#include <array>
#include <cstdio>

#include "tokenizer/bpe_merge.h"
#include "tokenizer/hf/models.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

constexpr std::string_view kWhere = "model BPE";

class Bpe final : public Model {
 public:
  explicit Bpe(const Json& spec) {
    vocab_ = vocab_from_object(spec.value("vocab", Json()), kWhere);
    dropout_ = spec.contains("dropout") && spec["dropout"].is_number() ? spec["dropout"].get<double>() : 0.0;
    if (dropout_ > 0.0) fail(kWhere, "dropout is for training; a tokenizer that samples its merges is not supported");
    unk_ = optional_token(spec, "unk_token");
    prefix_ = string_field(spec, "continuing_subword_prefix", kWhere, "");
    suffix_ = string_field(spec, "end_of_word_suffix", kWhere, "");
    fuse_unk_ = bool_field(spec, "fuse_unk", false, kWhere);
    byte_fallback_ = bool_field(spec, "byte_fallback", false, kWhere);
    ignore_merges_ = bool_field(spec, "ignore_merges", false, kWhere);
    if (byte_fallback_) {
      for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_ids_[static_cast<std::size_t>(b)] = vocab_.find(name);
      }
    }
    read_merges(spec.value("merges", Json::array()));
  }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (take_whole_word(word.size(), ignore_merges_, ignore_merges_ ? vocab_.find(word) : -1, out)) return;
    std::vector<BpeSymbol> symbols = initial_symbols(word);
    merge_symbols(symbols, merges_);
    for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
      out.push_back(symbols[static_cast<std::size_t>(i)].id);
    }
  }

 private:
  int32_t optional_token(const Json& spec, const char* key) const {
    const std::string text = string_field(spec, key, kWhere, "");
    if (text.empty()) return kNoToken;
    const int32_t id = vocab_.find(text);
    if (id < 0) fail(kWhere, std::string(key) + " '" + text + "' is not in the vocab");
    return id;
  }

  void read_merges(const Json& merges) {
    if (!merges.is_array()) fail(kWhere, "\"merges\" is not a list");
    merges_.reserve(merges.size());
    std::string left, right;
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
      const Json& m = merges[rank];
      if (m.is_string()) {
        const std::string& line = m.get_ref<const std::string&>();
        const std::size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
          fail(kWhere, "merge " + std::to_string(rank) + " '" + line + "' is not two parts separated by one space");
        left = line.substr(0, space);
        right = line.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        left = m[0].get<std::string>();
        right = m[1].get<std::string>();
      } else {
        fail(kWhere, "merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      const int32_t l = vocab_.find(left), r = vocab_.find(right);
      if (l < 0 || r < 0 || right.size() < prefix_.size())
        fail(kWhere, "merge " + std::to_string(rank) + " ('" + left + "', '" + right + "') has a part outside the vocab");
      const std::string joined = left + right.substr(prefix_.size());
      const int32_t result = vocab_.find(joined);
      if (result < 0) fail(kWhere, "merge " + std::to_string(rank) + " makes '" + joined + "', which is not in the vocab");
      merges_.try_emplace(bpe_pair_key(l, r), BpeMerge{static_cast<int32_t>(rank), result});
    }
  }

  // One symbol per character (with the prefix on all but the first, the suffix on the
  // last); characters outside the vocabulary become byte tokens, the unknown token
  // (fused with its unknown neighbours when asked), or nothing.
  std::vector<BpeSymbol> initial_symbols(std::string_view word) const {
    std::vector<BpeSymbol> symbols;
    int32_t pending_unk_length = -1;
    uint32_t begin = 0;
    auto add = [&](int32_t id, uint32_t length) {
      push_symbol(symbols, id, begin, length);
      begin += length;
    };
    auto flush_unk = [&] {
      if (pending_unk_length >= 0) add(unk_, static_cast<uint32_t>(pending_unk_length));
      pending_unk_length = -1;
    };
    std::string piece;
    for (std::size_t pos = 0; pos < word.size();) {
      const std::size_t n = std::min(utf8::length_from_lead(static_cast<unsigned char>(word[pos])), word.size() - pos);
      piece.clear();
      if (pos > 0) piece += prefix_;
      piece.append(word.substr(pos, n));
      if (pos + n == word.size()) piece += suffix_;
      pos += n;
      const int32_t id = vocab_.find(piece);
      if (id >= 0) {
        flush_unk();
        add(id, static_cast<uint32_t>(n));
        continue;
      }
      if (byte_fallback_ && std::all_of(piece.begin(), piece.end(), [&](char b) {
            return byte_ids_[static_cast<unsigned char>(b)] >= 0;
          })) {
        flush_unk();
        for (char b : piece) add(byte_ids_[static_cast<unsigned char>(b)], 1);
        continue;
      }
      if (unk_ < 0) continue;
      if (pending_unk_length >= 0 && fuse_unk_) {
        pending_unk_length += static_cast<int32_t>(n);
      } else {
        flush_unk();
        pending_unk_length = static_cast<int32_t>(n);
      }
    }
    flush_unk();
    return symbols;
  }

  double dropout_ = 0.0;
  int32_t unk_ = kNoToken;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_{};
  BpeMerges merges_;
};

}  // namespace

std::unique_ptr<Model> make_bpe(const Json& spec) { return std::make_unique<Bpe>(spec); }

}  // namespace lamina::model::detail::hf
