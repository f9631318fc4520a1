// Shared by the Hugging Face folder tests: where the folders are and how
// their reference files read.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace lamina::model::hf_test {

namespace fs = std::filesystem;

inline fs::path hf_root() { return fs::path(LAMINA_TESTDATA_DIR) / "hf"; }

// The nine model folders of the test data.
inline const std::vector<std::string>& hf_dirs() {
  static const std::vector<std::string> kDirs = {"llama", "llama-spm", "qwen2", "qwen2-bf16", "qwen3",
                                                 "phi3",  "gpt2",      "gemma2", "mistral"};
  return kDirs;
}

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_text(p)); }

// A raw little-endian f32 file.
inline std::vector<float> read_f32(const fs::path& p) {
  const std::string bytes = read_text(p);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace lamina::model::hf_test
