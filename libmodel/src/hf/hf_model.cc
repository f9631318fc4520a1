#include "lamina/model/hf_model.h"

#include <memory>

#include "hf/architecture_metadata.h"
#include "hf/checkpoint.h"
#include "hf/hf_config.h"
#include "hf/mapped_file.h"
#include "hf/metadata_builder.h"
#include "hf/tensor_mapping.h"
#include "hf/tokenizer_metadata.h"
#include "lamina/model/config.h"

namespace lamina::model {
namespace {

// llama.cpp's llama_ftype values for general.file_type.
constexpr uint32_t kAllF32 = 0, kMostlyF16 = 1, kMostlyBf16 = 32;
// The block formats' bit layout version the converter stamps every file with.
constexpr uint32_t kQuantizationVersion = 2;

// What the assembled file's tensor views point into.
struct HfWeights {
  std::unique_ptr<hf::Checkpoint> checkpoint;
  hf::OwnedBuffers owned;
};

uint32_t file_type_of(const std::vector<gguf::TensorInfo>& tensors) {
  for (const auto& t : tensors) {
    if (t.n_dims < 2) continue;
    if (t.type == gguf::TensorType::BF16) return kMostlyBf16;
    if (t.type == gguf::TensorType::F16) return kMostlyF16;
  }
  return kAllF32;
}

std::string model_name(const std::filesystem::path& dir) {
  const auto clean = dir.lexically_normal();
  const auto name = (clean.has_filename() ? clean : clean.parent_path()).filename().string();
  return name.empty() ? std::string("model") : name;
}

}  // namespace

bool is_hf_model_dir(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_regular_file(path / "config.json", ec);
}

gguf::GgufFile load_hf_model(const std::filesystem::path& dir) {
  try {
    const auto config_path = dir / "config.json";
    const hf::HfConfig config(hf::parse_json_object(hf::read_text_file(config_path), config_path.string()),
                              config_path.string());
    const hf::HfArchitecture arch = hf::read_architecture(config);

    auto weights = std::make_shared<HfWeights>();
    weights->checkpoint = std::make_unique<hf::Checkpoint>(dir);
    std::vector<gguf::TensorInfo> tensors = hf::map_tensors(*weights->checkpoint, arch, weights->owned);

    hf::MetadataBuilder md;
    md.set("general.architecture", gguf::Value::string(arch.gguf_name));
    md.set("general.type", gguf::Value::string("model"));
    md.set("general.name", gguf::Value::string(model_name(dir)));
    hf::add_architecture_metadata(config, arch, md);
    md.set("general.file_type", gguf::Value::u32(file_type_of(tensors)));
    hf::add_tokenizer_metadata(dir, config, arch, md);
    md.set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
    return gguf::GgufFile::assemble(md.take(), std::move(tensors), std::move(weights));
  } catch (const hf::SafetensorsError& e) {
    throw ModelError(e.what());
  } catch (const gguf::GgufError& e) {
    throw ModelError(dir.string() + ": " + e.what());
  }
}

gguf::GgufFile load_hf_tokenizer(const std::filesystem::path& dir) {
  try {
    const auto config_path = dir / "config.json";
    const bool has_config = std::filesystem::exists(config_path);
    const hf::HfConfig config(
        has_config ? hf::parse_json_object(hf::read_text_file(config_path), config_path.string()) : hf::Json::object(),
        config_path.string());
    hf::HfArchitecture arch;
    arch.n_vocab = has_config ? config.u32("vocab_size").value_or(0) : 0;
    hf::MetadataBuilder md;
    md.set("general.type", gguf::Value::string("vocab"));
    md.set("general.name", gguf::Value::string(model_name(dir)));
    hf::add_tokenizer_metadata(dir, config, arch, md);
    return gguf::GgufFile::assemble(md.take(), {}, nullptr);
  } catch (const gguf::GgufError& e) {
    throw ModelError(dir.string() + ": " + e.what());
  }
}

}  // namespace lamina::model
