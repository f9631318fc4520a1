#include "convert_model.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "lamina/model/hf_model.h"
#include "lamina/quant/thread_pool.h"
#include "quant_mix.h"
#include "row_conversion.h"
#include "tensor_report.h"
#include "tensor_type_rules.h"

namespace lamina::convert {
namespace {

namespace fs = std::filesystem;
using gguf::TensorType;

std::string type_name(TensorType type) { return std::string(gguf::tensor_type_name(type)); }

// The output must not replace the folder or anything in it.
void reject_input_as_output(const fs::path& input, const fs::path& output) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(output, ec);
  const fs::path in = fs::weakly_canonical(input, ec);
  if (ec || out == in || (fs::exists(output) && out.parent_path() == in))
    throw std::runtime_error(output.string() + ": refusing to overwrite the input model folder or a file in it");
}

std::string progress_line(std::size_t k, std::size_t n, const gguf::TensorInfo& t, TensorType to, uint64_t bytes) {
  char counter[32];
  std::snprintf(counter, sizeof counter, "[%4zu/%4zu] ", k + 1, n);
  std::string line = counter + t.name + " " + quantize::shape_text(t.shape()) + " ";
  if (to == t.type) return line + type_name(t.type) + ", " + quantize::byte_size_text(bytes);
  return line + type_name(t.type) + " -> " + type_name(to) + ", " + quantize::byte_size_text(bytes);
}

}  // namespace

ConvertSummary convert_model(const ConvertOptions& options, std::ostream& progress) {
  const quantize::QuantMix* mix = quantize::find_mix(options.type);
  if (!mix) throw std::runtime_error("unknown type '" + options.type + "' (one of: " + quantize::mix_names() + ")");
  if (!model::is_hf_model_dir(options.input))
    throw std::runtime_error(options.input.string() + ": not a Hugging Face model folder (no config.json)");
  reject_input_as_output(options.input, options.output);

  const gguf::GgufFile file = model::load_hf_model(options.input);
  const auto& tensors = file.tensors();
  std::vector<quantize::TensorSpec> specs;
  for (const auto& t : tensors) specs.push_back({t.name, t.type, {t.shape().begin(), t.shape().end()}});
  quantize::TypeRuleOptions rules;
  rules.mix = mix;
  const auto choices = quantize::choose_tensor_types(quantize::model_shape_from(file), specs, rules);

  gguf::GgufWriter writer(file.alignment());
  writer.copy_metadata_from(file);
  writer.set("general.file_type", gguf::Value::u32(static_cast<uint32_t>(mix->file_type)));
  for (std::size_t i = 0; i < tensors.size(); ++i)
    writer.add_tensor_deferred(tensors[i].name, choices[i].type, tensors[i].shape());

  quant::ThreadPool pool(options.threads);
  progress << "lamina-convert: " << options.input.string() << " -> " << options.output.string() << " as "
           << mix->name << ", " << tensors.size() << " tensors\n";
  ConvertSummary summary;
  summary.n_tensors = tensors.size();
  writer.write_file(options.output, [&](std::size_t k, std::span<std::byte> out) {
    const gguf::TensorInfo& t = tensors[k];
    const TensorType to = choices[k].type;
    if (to == t.type) {
      std::memcpy(out.data(), t.data.data(), out.size());
    } else {
      try {
        quantize::convert_rows(quantize::stored_rows(*quantize::quant_format_of(t.type), t.data.data(), t.ne[0]), t.n_rows(),
                     t.ne[0], *quantize::quant_format_of(to), out, pool);
      } catch (const std::exception& e) {
        throw std::runtime_error("tensor '" + t.name + "': " + e.what());
      }
      ++summary.n_converted;
    }
    summary.bytes_out += out.size();
    progress << progress_line(k, tensors.size(), t, to, out.size()) << '\n' << std::flush;
  });
  return summary;
}

}  // namespace lamina::convert
