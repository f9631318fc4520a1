// Shared helpers of the tokenizer tests: test data paths, cached tokenizers of the
// reference vocabularies, and small synthetic vocabularies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "lamina/model/tokenizer.h"

namespace lamina::model::test {

inline std::filesystem::path testdata_dir() { return LAMINA_TESTDATA_DIR; }

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The tokenizer of a GGUF file under testdata, loaded once per test binary; nullopt when
// the file is missing.
inline std::optional<Tokenizer> tokenizer_from_testdata(const std::string& relative_path) {
  static std::map<std::string, Tokenizer> cache;
  if (auto it = cache.find(relative_path); it != cache.end()) return it->second;
  const std::filesystem::path path = testdata_dir() / relative_path;
  if (!std::filesystem::exists(path)) return std::nullopt;
  Tokenizer t = Tokenizer::from_gguf(gguf::GgufFile::open(path));
  cache.emplace(relative_path, t);
  return t;
}

// A GGUF with only tokenizer metadata, for building small vocabularies in tests.
struct VocabSpec {
  std::string model = "llama";
  std::vector<std::string> tokens;
  std::vector<float> scores;        // empty: no scores key
  std::vector<int32_t> types;       // empty: no token_type key
  std::vector<std::string> merges;  // empty: no merges key
  std::string pre;                  // empty: no pre key
};

inline gguf::GgufFile make_vocab_file(const VocabSpec& spec, std::vector<std::byte>& storage,
                                      const std::vector<std::pair<std::string, gguf::Value>>&
                                          extra = {}) {
  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  if (!spec.model.empty()) w.set("tokenizer.ggml.model", gguf::Value::string(spec.model));
  if (!spec.pre.empty()) w.set("tokenizer.ggml.pre", gguf::Value::string(spec.pre));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array(spec.tokens));
  if (!spec.scores.empty()) w.set("tokenizer.ggml.scores", gguf::Value::f32_array(spec.scores));
  if (!spec.types.empty()) w.set("tokenizer.ggml.token_type", gguf::Value::i32_array(spec.types));
  if (!spec.merges.empty()) w.set("tokenizer.ggml.merges", gguf::Value::string_array(spec.merges));
  for (const auto& [key, value] : extra) w.set(key, value);
  storage = w.to_bytes();
  return gguf::GgufFile::parse(storage);
}

}  // namespace lamina::model::test
