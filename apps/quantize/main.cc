// lamina-quantize: converts an F32/F16/BF16 GGUF model to a quantization mix.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>

#include "lamina/gguf/types.h"
#include "quant_mix.h"
#include "quantize_model.h"
#include "row_conversion.h"
#include "tensor_report.h"
#include "tensor_type_rules.h"

namespace {

using lamina::gguf::TensorType;
using lamina::quantize::QuantizeError;

// A type for one tensor: any type lamina can write.
std::optional<TensorType> parse_tensor_type(const std::string& option, const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto type = lamina::gguf::tensor_type_from_name(text);
  if (!type || !lamina::quantize::quant_format_of(*type))
    throw QuantizeError(option + ": '" + text + "' is not a tensor type lamina can write");
  return type;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lamina-quantize: convert an F32/F16/BF16 GGUF model to a quantized mix", "lamina-quantize"};
  app.set_version_flag("--version", std::string("lamina-quantize ") + LAMINA_VERSION);
  app.footer("TYPE is one of: " + lamina::quantize::mix_names() +
             ".\nThe _S/_M/_L mixes give some tensors more bits, as llama-quantize does.");
  lamina::quantize::QuantizeOptions options;
  std::string input, output, type_name, output_type, token_embd_type;
  app.add_option("IN", input, "input GGUF model (F32, F16 or BF16 weights)")->required();
  app.add_option("OUT", output, "output GGUF file (written only once complete)")->required();
  app.add_option("TYPE", type_name, "quantization mix, e.g. Q4_K_M")->required();
  app.add_flag("--pure", options.pure, "give every quantized tensor the mix's base type");
  app.add_option("-t,--threads", options.threads, "worker threads (default: all cores)");
  app.add_option("--output-tensor-type", output_type, "type of output.weight, e.g. Q8_0");
  app.add_option("--token-embedding-type", token_embd_type, "type of token_embd.weight");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }

  try {
    options.input = input;
    options.output = output;
    options.mix = lamina::quantize::find_mix(type_name);
    if (options.mix == nullptr)
      throw QuantizeError("unknown type '" + type_name + "' (one of: " + lamina::quantize::mix_names() + ")");
    options.output_type = parse_tensor_type("--output-tensor-type", output_type);
    options.token_embd_type = parse_tensor_type("--token-embedding-type", token_embd_type);
    const auto summary = lamina::quantize::quantize_model(options, std::cerr);
    std::cerr << "lamina-quantize: " << summary.n_tensors << " tensors ("
              << summary.n_converted << " converted, " << summary.n_fallback
              << " on a fallback type), "
              << lamina::quantize::byte_size_text(summary.bytes_in) << " -> "
              << lamina::quantize::byte_size_text(summary.bytes_out) << '\n';
  } catch (const std::exception& e) {
    std::cerr << "lamina-quantize: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
