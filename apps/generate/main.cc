// lamina-generate: text generation from a GGUF model, with llama.cpp-style flags.
#include <CLI/CLI.hpp>

#include <iostream>

#include "default_model.h"
#include "run_generate.h"

int main(int argc, char** argv) {
  CLI::App app{"lamina-generate: generate text with a GGUF model (default: the bundled stories260K)", "lamina-generate"};
  app.set_version_flag("--version", std::string("lamina-generate ") + LAMINA_VERSION);
  lamina::generate_app::Options o;
  auto& s = o.sampling;
  app.add_option("-m,--model", o.model_path,
                 "GGUF model file or Hugging Face model folder (default: bundled stories260K.gguf)");
  auto* prompt = app.add_option("-p,--prompt", o.prompt, "prompt text");
  auto* file = app.add_option("-f,--file", o.prompt_file, "read the prompt from a file")->check(CLI::ExistingFile);
  auto* ids = app.add_option("--prompt-ids", o.prompt_ids, "prompt as comma-separated token ids")->delimiter(',');
  prompt->excludes(file)->excludes(ids);
  file->excludes(ids);
  app.add_option("-n,--n-predict", o.n_predict, "tokens to generate (-1: until the context is full)")
      ->check(CLI::Range(-1, 1 << 30));
  app.add_option("-c,--ctx-size", o.n_ctx, "context size (0: the model's, at most 4096)")->check(CLI::Range(0, 1 << 24));
  app.add_option("-t,--threads", o.n_threads, "threads (0: all)")->check(CLI::Range(0, 1024));
  app.add_option("-b,--batch-size", o.batch_size, "prompt tokens per forward step")->check(CLI::Range(1, 65536));
  app.add_option("-s,--seed", s.seed, "random seed");
  app.add_option("--temp", s.temperature, "temperature (0: greedy)")->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", s.top_k, "top-k (0: off)")->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", s.top_p, "top-p (1: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", s.min_p, "min-p (0: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1: off)")->check(CLI::Range(0.0, 100.0));
  app.add_option("--presence-penalty", s.presence_penalty, "presence penalty (0: off)");
  app.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (0: off)");
  app.add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalties look back at (-1: all)")
      ->check(CLI::Range(-1, 1 << 30));
  app.add_option("--stop", o.stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", o.ignore_eos, "keep generating past end-of-generation tokens");
  app.add_flag("--chat", o.chat, "wrap the prompt as a user message with the model's chat template");
  app.add_option("--system", o.system, "system message for --chat");
  app.add_option("--chat-template", o.chat_template, "chat family: chatml, llama2, llama3, mistral, phi3, gemma");
  app.add_option("--device", o.device, "compute device: cpu, cuda or auto (cuda when it works)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--gpu", o.gpu_index, "CUDA device index")->check(CLI::Range(0, 64));
  app.add_option("--backend-dir", o.backend_dir,
                 "folder of the CUDA backend module (default: the installed one; a build tree's is <build>/libmodel/backends/cuda)");
  app.add_flag("!--no-parity-check", o.parity_check, "skip the CPU/GPU comparison at load");
  app.add_flag("!--no-pack", o.pack_weights,
               "CPU: run the weights in the file's layout instead of packing them at load for faster kernels");
  app.add_option("--parity-min-cosine", o.parity_min_cosine,
                 "logits cosine the GPU must reach against the CPU at load (default: 0.9999 for float weights, "
                 "0.99 for quantized)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("!--no-cuda-graphs", o.cuda_graphs, "launch the GPU decode step eagerly instead of as a CUDA graph");
  app.add_option("--kv-type", o.kv_type, "KV cache type")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
  app.add_option("--quantize", o.quantize, "quantize the float weights at load: q8_0, q4_k, q6_k, ... (faster, not exact)");
  app.add_flag("--json", o.json, "print one JSON document instead of streaming text");
  app.add_option("--logits-out", o.logits_out, "write the logits of every prompt position (raw f32)");
  app.add_flag("--no-display-prompt", o.no_display_prompt, "do not echo the prompt before the generated text");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (o.model_path.empty()) o.model_path = lamina::generate_app::default_model_path();
    return lamina::generate_app::run(o);
  } catch (const std::exception& e) {
    std::cerr << "lamina-generate: " << e.what() << '\n';
    return 1;
  }
}
