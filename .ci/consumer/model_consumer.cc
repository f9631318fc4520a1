// Builds against an installed libmodel through pkg-config only: 200 greedy
// tokens of the bundled model from BOS, compared with llama2.c's text when
// the reference file is given.
#include <lamina/model/forward.h>
#include <lamina/model/generate.h>
#include <lamina/model/model.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: model_consumer MODEL.gguf [EXPECTED.txt]\n";
    return 2;
  }
  try {
    const auto model = lamina::model::Model::load(argv[1]);
    lamina::model::ForwardOptions forward_options;
    forward_options.n_threads = 1;
    lamina::model::CpuForward forward(*model, forward_options);
    lamina::model::GenerateOptions options;
    options.n_predict = 200;
    options.sampling.temperature = 0.0f;
    const auto prompt = model->tokenizer().encode("", /*add_special=*/true, /*parse_special=*/false);
    const auto result = lamina::model::generate(*model, forward, prompt, options);
    std::cout << result.generated_ids.size() << " tokens: " << result.text.substr(0, 60) << "...\n";
    if (argc == 3) {
      std::ifstream in(argv[2], std::ios::binary);
      const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::cerr << "cannot read " << argv[2] << '\n';
        return 1;
      }
      if (result.text != expected) {
        std::cerr << "the generated text differs from " << argv[2] << '\n';
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  return 0;
}
