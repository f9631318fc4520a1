// lamina-synth-model: writes a model with random weights in the shapes of a
// real one (and a working tokenizer of its size), for benchmarks and tests.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "presets.h"
#include "quant_mix.h"
#include "synth_model.h"
#include "tensor_report.h"

namespace {

std::string preset_list() {
  std::string list;
  for (const auto& p : lamina::synth::all_presets()) {
    list += "  " + std::string(p.name) + ": " + std::string(p.arch) + ", " +
            std::to_string(p.n_layer) + " layers, hidden " + std::to_string(p.n_embd) + ", " +
            std::to_string(p.n_head) + "/" + std::to_string(p.n_head_kv) + " heads, ffn " +
            std::to_string(p.n_ff) + ", vocab " + std::to_string(p.n_vocab) +
            (p.tied_embeddings ? ", tied embeddings" : "") + (p.qkv_bias ? ", QKV bias" : "") +
            (p.n_expert ? ", " + std::to_string(p.n_expert) + " experts (" + std::to_string(p.n_expert_used) +
                              " used)"
                        : "") +
            (!p.sliding_window ? ""
             : p.sliding_window_pattern > 0
                 ? ", window " + std::to_string(p.sliding_window) + " on " +
                       std::to_string(p.sliding_window_pattern - 1) + " layers of " +
                       std::to_string(p.sliding_window_pattern)
                 : ", window " + std::to_string(p.sliding_window) + " on even layers") +
            (p.mla ? " + " + std::to_string(p.mla->n_expert_shared) + " shared, latent attention (kv_lora " +
                         std::to_string(p.mla->kv_lora_rank) + "), first " + std::to_string(p.mla->n_dense_lead) +
                         " dense (ffn " + std::to_string(p.mla->n_ff_dense) + ")"
                   : "") +
            "\n";
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lamina-synth-model: write a random-weight GGUF model in the shapes of a real one"};
  app.footer("Presets:\n" + preset_list());
  std::string preset_name, output, type_name = "F16";
  lamina::synth::SynthOptions options;
  bool list = false;
  app.add_flag("--list", list, "list the presets and exit");
  app.add_option("PRESET", preset_name, "model preset, e.g. qwen2-0.5b");
  app.add_option("OUT", output, "output GGUF file");
  app.add_option("--type", type_name, "F16 (default), F32, BF16 or a quantization mix (Q4_K_M, ...)");
  app.add_option("--seed", options.seed, "random seed (default 0)");
  app.add_option("-t,--threads", options.threads, "worker threads (default: all cores)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  if (list) {
    std::cout << preset_list();
    return 0;
  }

  try {
    if (preset_name.empty() || output.empty()) throw std::runtime_error("PRESET and OUT are required");
    options.preset = lamina::synth::find_preset(preset_name);
    if (options.preset == nullptr)
      throw std::runtime_error("unknown preset '" + preset_name + "' (see --list)");
    options.mix = lamina::quantize::find_mix(type_name);
    if (options.mix == nullptr) throw std::runtime_error("unknown type '" + type_name + "'");
    options.output = output;
    const auto summary = lamina::synth::write_synth_model(options, std::cerr);
    std::cerr << "lamina-synth-model: " << summary.n_tensors << " tensors, " << summary.n_params
              << " parameters, " << lamina::quantize::byte_size_text(summary.tensor_bytes)
              << " of tensor data\n";
  } catch (const std::exception& e) {
    std::cerr << "lamina-synth-model: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
