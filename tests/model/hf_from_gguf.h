// Shared by the hf_from_gguf_*_test.cc files: Hugging Face folders of the
// later architectures, written by the tests from the archs/ GGUF models (the
// weights under transformers' names, in its layout: Q/K rows in rotate-half
// order, one matrix per expert). Loading a folder must give the model the
// GGUF file is, so its logits are the GGUF model's bit for bit, and those
// match llama.cpp (forward_test). Damaged folders are refused naming what is
// wrong. Each architecture's file writes its own folders.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/model/config.h"
#include "lamina/model/model.h"

namespace lamina::model::hf_test {

namespace fs = std::filesystem;
inline const fs::path kArchs = fs::path(LAMINA_TESTDATA_DIR) / "archs";

struct HfTensor {
  std::string name;
  std::vector<uint64_t> shape;  // PyTorch order
  std::vector<float> values;
  std::vector<uint8_t> bytes;   // a U8 tensor instead (MXFP4 blocks and scales)
};

// ggml rows [first, first + n) of a tensor, dequantized.
std::vector<float> rows_of(const gguf::TensorInfo& t, std::size_t first, std::size_t n);
// A 2-D tensor (or expert `e` of a 3-D one) as a PyTorch [ne1, ne0] matrix.
HfTensor matrix(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name, uint32_t e = 0);
HfTensor vector(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name);
// The config.json keys every class here shares, from the GGUF model's configuration.
nlohmann::json common_config(const std::string& hf_class, const ModelConfig& c);

// Each architecture's folder: its tensors under transformers' names and its config.json.
std::vector<HfTensor> mixtral_tensors(const gguf::GgufFile& f, const ModelConfig& c);
nlohmann::json mixtral_config(const ModelConfig& c);
std::vector<HfTensor> gemma3_tensors(const gguf::GgufFile& f, const ModelConfig& c);
nlohmann::json gemma3_config(const ModelConfig& c);
std::vector<HfTensor> deepseek2_tensors(const gguf::GgufFile& f, const ModelConfig& c);
nlohmann::json deepseek2_config(const ModelConfig& c);
std::vector<HfTensor> gpt_oss_tensors(const gguf::GgufFile& f, const ModelConfig& c);
std::vector<HfTensor> gpt_oss_mxfp4_tensors(const gguf::GgufFile& f, const ModelConfig& c);
nlohmann::json gpt_oss_config(const ModelConfig& c);

// The logits of every position of `ids` (one sequence) on the CPU, exactly.
std::vector<float> logits_of(const Model& model, const std::vector<int32_t>& ids);

class HfFromGguf : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Writes the folder of `gguf_name`, letting `edit` damage it first.
  std::unique_ptr<Model> write_folder(const std::string& gguf_name,
                                      const std::function<void(std::vector<HfTensor>&, nlohmann::json&)>& edit = {});
  // The message of loading the folder, or "(loaded)".
  std::string load_error();

  fs::path dir_;
};

}  // namespace lamina::model::hf_test
