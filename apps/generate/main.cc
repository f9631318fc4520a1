// lamina-generate: text generation from a GGUF model, with llama.cpp-style flags.
#include <CLI/CLI.hpp>

#include <iostream>

#include "default_model.h"
#include "run_flags.h"
#include "run_generate.h"

namespace apps = lamina::apps;

int main(int argc, char** argv) {
  CLI::App app{"lamina-generate: generate text with a GGUF model (default: the bundled stories260K)", "lamina-generate"};
  app.set_version_flag("--version", std::string("lamina-generate ") + LAMINA_VERSION);
  lamina::generate_app::Options o;
  app.add_option("-m,--model", o.model_path,
                 "GGUF model file or Hugging Face model folder (default: bundled stories260K.gguf)");
  auto* prompt = app.add_option("-p,--prompt", o.prompt, "prompt text");
  auto* file = app.add_option("-f,--file", o.prompt_file, "read the prompt from a file")->check(CLI::ExistingFile);
  auto* ids = app.add_option("--prompt-ids", o.prompt_ids, "prompt as comma-separated token ids")->delimiter(',');
  prompt->excludes(file)->excludes(ids);
  file->excludes(ids);
  app.add_option("-n,--n-predict", o.n_predict, "tokens to generate (-1: until the context is full)")
      ->check(CLI::Range(-1, 1 << 30));
  apps::add_run_flags(app, o.run);
  apps::add_sampling_flags(app, o.sampling);
  app.add_option("--stop", o.stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", o.ignore_eos, "keep generating past end-of-generation tokens");
  app.add_flag("--chat", o.chat, "wrap the prompt as a user message with the model's chat template");
  app.add_option("--system", o.system, "system message for --chat");
  apps::add_chat_template_flag(app, o.chat_template);
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
    if (o.model_path.empty()) o.model_path = apps::default_model_path();
    return lamina::generate_app::run(o);
  } catch (const std::exception& e) {
    std::cerr << "lamina-generate: " << apps::flag_message(e.what()) << '\n';
    return 1;
  }
}
