// Real tokenizers of current model families (tokenizer.json files shipped in npm
// packages), and tokenizers built from the corpus for the components no family uses,
// against Hugging Face's tokenizers library: ids with and without special tokens and
// the decodes of them, for every string of the corpus in
// hf_tokenizers/generate_vectors.mjs. Each family's tokenizer is loaded twice: as its
// folder (the tokenizer.json pipeline) and as the GGUF metadata llama.cpp reads
// (tokenizer.ggml.*, with the pre-tokenizer by name), without the pipeline.
// Usage: model_hf_tokenizer_reference VECTORS_DIR (written by run_reference.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lamina/gguf/writer.h"
#include "lamina/model/hf_model.h"
#include "lamina/model/tokenizer.h"
#include "tokenizer_reference_check.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;

fs::path g_vectors_dir;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

// The file as a converter that knows only llama.cpp's keys writes it: serialized by
// the GGUF writer (as lamina-convert writes), then parsed back.
struct WrittenGguf {
  explicit WrittenGguf(std::vector<std::byte> written) : bytes(std::move(written)), file(gguf::GgufFile::parse(bytes)) {}
  std::vector<std::byte> bytes;  // what `file` reads
  gguf::GgufFile file;
};
WrittenGguf without_pipeline(const gguf::GgufFile& file) {
  gguf::GgufWriter writer;
  writer.copy_metadata_from(file);
  writer.remove("tokenizer.huggingface.json");
  return WrittenGguf(writer.to_bytes());
}

struct Counts {
  std::size_t encode_with = 0, encode_without = 0, decode_keep = 0, decode_skip = 0, decode_plain = 0, all = 0;
  void add(const reference_check::Outcome& o) {
    encode_with += o.encode_with;
    encode_without += o.encode_without;
    decode_keep += o.decode_keep;
    decode_skip += o.decode_skip;
    decode_plain += o.decode_plain;
    all += o.all();
  }
};

Counts run_vectors(const Tokenizer& tok, const nlohmann::json& cases, const std::string& label) {
  Counts counts;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const reference_check::Expected e{c["text"],
                                      c["ids_with_special"],
                                      c["ids_no_special"],
                                      c["decode_keep_special"],
                                      c["decode_skip_special"],
                                      c["decode_no_special"]};
    counts.add(reference_check::check(tok, e, label + " string " + std::to_string(i)));
  }
  return counts;
}

void report(const std::string& name, const char* form, const Counts& c, std::size_t n, double seconds) {
  std::printf("%-24s %-5s encode+special %3zu/%zu  encode %3zu/%zu  decode %3zu/%zu  decode-skip %3zu/%zu  "
              "decode-plain %3zu/%zu  (%.2f s)\n",
              name.c_str(), form, c.encode_with, n, c.encode_without, n, c.decode_keep, n, c.decode_skip, n,
              c.decode_plain, n, seconds);
}

void check_tokenizer(const std::string& name) {
  const fs::path dir = g_vectors_dir / name;
  const nlohmann::json vectors = read_json(dir / "vectors.json");
  const nlohmann::json& cases = vectors["cases"];
  const std::size_t n = cases.size();
  ASSERT_GT(n, 0u);

  auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const gguf::GgufFile file = load_hf_tokenizer(dir);
  const Tokenizer pipeline = Tokenizer::from_gguf(file);
  ASSERT_TRUE(pipeline.has_hf_pipeline());
  report(name, "json", run_vectors(pipeline, cases, name + " (tokenizer.json)"), n, seconds());

  // Tokenizers built for the components no model family uses have no llama.cpp form.
  if (!vectors.value("gguf", true)) return;
  start = std::chrono::steady_clock::now();
  const WrittenGguf written = without_pipeline(file);
  const Tokenizer metadata = Tokenizer::from_gguf(written.file);
  ASSERT_FALSE(metadata.has_hf_pipeline());
  report(name, "gguf", run_vectors(metadata, cases, name + " (GGUF metadata)"), n, seconds());
}

class RealTokenizer : public ::testing::Test {
 public:
  explicit RealTokenizer(std::string name) : name_(std::move(name)) {}
  void TestBody() override { check_tokenizer(name_); }

 private:
  std::string name_;
};

}  // namespace
}  // namespace lamina::model

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s VECTORS_DIR\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  lamina::model::g_vectors_dir = argv[1];
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(argv[1])) {
    if (fs::exists(entry.path() / "vectors.json")) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    std::fprintf(stderr, "%s: no tokenizer vectors in %s\n", argv[0], argv[1]);
    return 1;
  }
  for (const std::string& name : names) {
    ::testing::RegisterTest("RealTokenizer", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [name]() -> ::testing::Test* { return new lamina::model::RealTokenizer(name); });
  }
  return RUN_ALL_TESTS();
}
