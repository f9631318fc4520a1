#include "quantize_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "lamina/quant/thread_pool.h"
#include "row_conversion.h"
#include "tensor_report.h"
#include "tensor_type_rules.h"

namespace lamina::quantize {
namespace {

using gguf::TensorType;

// llama-quantize's version of the block formats' bit layout.
constexpr uint32_t kQuantizationVersion = 2;

std::string type_name(TensorType type) { return std::string(gguf::tensor_type_name(type)); }

void reject_same_file(const std::filesystem::path& input, const std::filesystem::path& output) {
  std::error_code ec;
  const bool same = std::filesystem::equivalent(input, output, ec);
  if ((!ec && same) || input.lexically_normal() == output.lexically_normal())
    throw QuantizeError(output.string() + ": the output would overwrite the input");
}

gguf::GgufFile open_input(const std::filesystem::path& path) {
  try {
    return gguf::GgufFile::open(path);
  } catch (const gguf::GgufError& e) {
    throw QuantizeError(path.string() + ": " + e.what());
  }
}

// Only the float formats are converted: requantizing a block format would
// stack a second rounding error on the first.
void check_convertible(const gguf::TensorInfo& t, TensorType target) {
  if (t.type == target) return;
  if (t.type != TensorType::F32 && t.type != TensorType::F16 && t.type != TensorType::BF16)
    throw QuantizeError("tensor '" + t.name + "' is stored as " + type_name(t.type) +
                        ": only F32, F16 and BF16 tensors can be converted (to " +
                        type_name(target) + ")");
  if (!quant_format_of(target))
    throw QuantizeError("tensor '" + t.name + "': cannot write type " + type_name(target));
}

void copy_metadata(const gguf::GgufFile& file, FileType file_type, gguf::GgufWriter& writer) {
  writer.copy_metadata_from(file);
  // A split model's parts become one file.
  for (const char* key : {"split.no", "split.count", "split.tensors.count"}) writer.remove(key);
  // Re-added at the end, where llama-quantize puts them.
  writer.remove("general.quantization_version");
  writer.remove("general.file_type");
  writer.set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
  writer.set("general.file_type", gguf::Value::u32(static_cast<uint32_t>(file_type)));
}

std::string progress_line(std::size_t k, std::size_t n, const gguf::TensorInfo& t,
                          const TypeChoice& choice, uint64_t bytes_out) {
  char counter[32];
  std::snprintf(counter, sizeof counter, "[%4zu/%4zu] ", k + 1, n);
  std::string line = counter + t.name + " " + shape_text(t.shape()) + " ";
  if (choice.type == t.type) {
    line += type_name(t.type) + ", " + byte_size_text(t.n_bytes) + " (copied)";
  } else {
    line += type_name(t.type) + " -> " + type_name(choice.type) + ", " +
            byte_size_text(t.n_bytes) + " -> " + byte_size_text(bytes_out);
  }
  if (choice.fallback_from) {
    line += " (row length " + std::to_string(t.ne[0]) + " does not fit " +
            type_name(*choice.fallback_from) + ")";
  }
  return line;
}

}  // namespace

QuantizeSummary quantize_model(const QuantizeOptions& options, std::ostream& progress) {
  if (options.mix == nullptr) throw QuantizeError("no quantization type given");
  reject_same_file(options.input, options.output);
  const gguf::GgufFile file = open_input(options.input);
  const auto& tensors = file.tensors();

  std::vector<TensorSpec> specs;
  specs.reserve(tensors.size());
  for (const auto& t : tensors) {
    specs.push_back({t.name, t.type, {t.shape().begin(), t.shape().end()}});
  }
  TypeRuleOptions rules;
  rules.mix = options.mix;
  rules.pure = options.pure;
  rules.output_type = options.output_type;
  rules.token_embd_type = options.token_embd_type;
  const std::vector<TypeChoice> choices = choose_tensor_types(model_shape_from(file), specs, rules);
  for (std::size_t i = 0; i < tensors.size(); ++i) check_convertible(tensors[i], choices[i].type);

  gguf::GgufWriter writer;
  copy_metadata(file, options.mix->file_type, writer);
  std::vector<std::string> names;
  for (const auto& t : tensors) names.push_back(t.name);
  const std::vector<std::size_t> order = llama_quantize_order(names);
  for (std::size_t i : order) {
    writer.add_tensor_deferred(tensors[i].name, choices[i].type, tensors[i].shape());
  }

  QuantizeSummary summary;
  summary.n_tensors = tensors.size();
  quant::ThreadPool pool(options.threads);
  progress << "lamina-quantize: " << options.input.string() << " -> " << options.output.string()
           << " as " << options.mix->name << (options.pure ? " (pure)" : "") << ", "
           << pool.num_threads() << " thread(s)\n";
  writer.write_file(options.output, [&](std::size_t k, std::span<std::byte> out) {
    const gguf::TensorInfo& t = tensors[order[k]];
    const TypeChoice& choice = choices[order[k]];
    if (choice.type == t.type) {
      std::memcpy(out.data(), t.data.data(), out.size());
    } else {
      try {
        const quant::QuantFormat from = *quant_format_of(t.type);
        convert_rows(stored_rows(from, t.data.data(), t.ne[0]), t.n_rows(), t.ne[0],
                     *quant_format_of(choice.type), out, pool);
      } catch (const std::exception& e) {
        throw QuantizeError("tensor '" + t.name + "': " + e.what());
      }
      ++summary.n_converted;
    }
    if (choice.fallback_from) ++summary.n_fallback;
    summary.bytes_in += t.n_bytes;
    summary.bytes_out += out.size();
    progress << progress_line(k, tensors.size(), t, choice, out.size()) << '\n' << std::flush;
  });
  return summary;
}

}  // namespace lamina::quantize
