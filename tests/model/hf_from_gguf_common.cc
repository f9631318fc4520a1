// The helpers of the hf_from_gguf tests (hf_from_gguf.h): tensors and
// folders written the way transformers stores them, and the fixture.
#include "hf_from_gguf.h"

#include <fstream>

#include "lamina/model/forward.h"
#include "lamina/quant/reference.h"

namespace lamina::model::hf_test {
namespace {

void write_safetensors(const fs::path& path, const std::vector<HfTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    const std::size_t bytes = t.bytes.empty() ? t.values.size() * sizeof(float) : t.bytes.size();
    header[t.name] = {{"dtype", t.bytes.empty() ? "F32" : "U8"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  out << text;
  for (const auto& t : tensors) {
    if (!t.bytes.empty()) {
      out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
      continue;
    }
    out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * 4));
  }
}

// Only ids are fed, so a tokenizer with a few words is enough for loading.
void write_tokenizer(const fs::path& dir) {
  std::ofstream(dir / "tokenizer.json")
      << R"({"model":{"type":"WordLevel","vocab":{"<unk>":0,"<s>":1,"</s>":2},"unk_token":"<unk>"},)"
         R"("pre_tokenizer":{"type":"Whitespace"}})";
}

}  // namespace

// ggml rows [first, first + n) of a tensor, dequantized.
std::vector<float> rows_of(const gguf::TensorInfo& t, std::size_t first, std::size_t n) {
  const auto format = *quant::format_from_id(static_cast<uint32_t>(t.type));
  const std::size_t row_bytes = quant::row_bytes(format, t.ne[0]);
  std::vector<float> out(n * t.ne[0]);
  for (std::size_t r = 0; r < n; ++r)
    quant::dequantize_row_ref(format, t.data.data() + (first + r) * row_bytes, out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

// A 2-D tensor (or expert `e` of a 3-D one) as a PyTorch [ne1, ne0] matrix.
HfTensor matrix(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name, uint32_t e) {
  const auto& t = f.tensor(gguf_name);
  return {hf_name, {t.ne[1], t.ne[0]}, rows_of(t, e * t.ne[1], t.ne[1]), {}};
}

HfTensor vector(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name) {
  const auto& t = f.tensor(gguf_name);
  return {hf_name, {t.ne[0]}, rows_of(t, 0, 1), {}};
}

nlohmann::json common_config(const std::string& hf_class, const ModelConfig& c) {
  return {{"architectures", {hf_class}},
          {"hidden_size", c.n_embd},
          {"num_hidden_layers", c.n_layer},
          {"num_attention_heads", c.n_head},
          {"num_key_value_heads", c.n_head_kv},
          {"vocab_size", c.n_vocab},
          {"max_position_embeddings", c.n_ctx_train},
          {"rms_norm_eps", c.norm_eps},
          {"rope_theta", c.rope.freq_base}};
}

void HfFromGguf::SetUp() {
  if (!fs::exists(kArchs / "mixtral.f32.gguf") || !fs::exists(kArchs / "gemma3.f32.gguf") ||
      !fs::exists(kArchs / "gptoss.f32.gguf"))
    GTEST_SKIP() << "test data not found at " << kArchs;
  dir_ = fs::path(testing::TempDir()) / ("lamina_hf_" + std::string(
      testing::UnitTest::GetInstance()->current_test_info()->name()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

void HfFromGguf::TearDown() { fs::remove_all(dir_); }

std::unique_ptr<Model> HfFromGguf::write_folder(
    const std::string& gguf_name, const std::function<void(std::vector<HfTensor>&, nlohmann::json&)>& edit) {
  auto model = Model::load(kArchs / gguf_name);
  const std::string_view arch = model->config().arch->name;
  const ModelConfig& c = model->config();
  const bool mxfp4 =
      arch == "gpt-oss" && model->file().tensor("blk.0.ffn_down_exps.weight").type == gguf::TensorType::MXFP4;
  auto tensors = arch == "gemma3"      ? gemma3_tensors(model->file(), c)
                 : arch == "deepseek2" ? deepseek2_tensors(model->file(), c)
                 : mxfp4               ? gpt_oss_mxfp4_tensors(model->file(), c)
                 : arch == "gpt-oss"   ? gpt_oss_tensors(model->file(), c)
                                       : mixtral_tensors(model->file(), c);
  auto config = arch == "gemma3"      ? gemma3_config(c)
                : arch == "deepseek2" ? deepseek2_config(c)
                : arch == "gpt-oss"   ? gpt_oss_config(c)
                                      : mixtral_config(c);
  if (edit) edit(tensors, config);
  write_safetensors(dir_ / "model.safetensors", tensors);
  std::ofstream(dir_ / "config.json") << config.dump();
  write_tokenizer(dir_);
  return model;
}

std::string HfFromGguf::load_error() {
  try {
    Model::load(dir_);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(loaded)";
}

std::vector<float> logits_of(const Model& model, const std::vector<int32_t>& ids) {
  CpuForward fwd(model, {.n_ctx = 64, .kv_type = KvType::F32, .n_threads = 1});
  std::vector<TokenInput> batch;
  for (std::size_t i = 0; i < ids.size(); ++i) batch.push_back({ids[i], static_cast<uint32_t>(i), 0, true});
  const auto l = fwd.decode(batch);
  return {l.begin(), l.end()};
}

}  // namespace lamina::model::hf_test
