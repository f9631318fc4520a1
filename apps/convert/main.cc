// lamina-convert: a Hugging Face model folder to a GGUF file, with the
// metadata, tensor names and tokenizer keys llama.cpp's converter writes.
#include <CLI/CLI.hpp>

#include <iostream>

#include "convert_model.h"
#include "tensor_report.h"

int main(int argc, char** argv) {
  CLI::App app{"lamina-convert: convert a Hugging Face model folder (safetensors) to GGUF", "lamina-convert"};
  app.set_version_flag("--version", std::string("lamina-convert ") + LAMINA_VERSION);
  app.footer("TYPE: f32, f16, bf16, or a quantization mix as lamina-quantize names them (q8_0, q4_k_m, ...).");
  lamina::convert::ConvertOptions options;
  std::string input, output;
  app.add_option("HF_DIR", input, "model folder with config.json, *.safetensors and tokenizer.json")->required();
  app.add_option("OUT", output, "GGUF file to write (written only once complete)")->required();
  app.add_option("--type,--outtype", options.type, "tensor type of the weights (default: f16)");
  app.add_option("-t,--threads", options.threads, "worker threads (default: all cores)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    options.input = input;
    options.output = output;
    const auto summary = lamina::convert::convert_model(options, std::cerr);
    std::cerr << "lamina-convert: wrote " << output << ": " << summary.n_tensors << " tensors ("
              << summary.n_converted << " converted), " << lamina::quantize::byte_size_text(summary.bytes_out)
              << '\n';
  } catch (const std::exception& e) {
    std::cerr << "lamina-convert: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
