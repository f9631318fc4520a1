// lamina-bench: prompt-processing and generation throughput, like llama-bench.
#include <CLI/CLI.hpp>

#include <iostream>

#include "bench_report.h"
#include "bench_runner.h"

int main(int argc, char** argv) {
  CLI::App app{"lamina-bench: measure prompt processing (pp) and generation (tg) speed of a GGUF model", "lamina-bench"};
  app.set_version_flag("--version", std::string("lamina-bench ") + LAMINA_VERSION);
  lamina::bench::BenchOptions o;
  std::string output = "md";
  app.add_option("-m,--model", o.model_path, "GGUF model file or Hugging Face model folder")->required();
  app.add_option("-p,--n-prompt", o.n_prompt, "prompt lengths to test (0 skips)")->delimiter(',');
  app.add_option("-n,--n-gen", o.n_gen, "generation lengths to test (0 skips)")->delimiter(',');
  app.add_option("-d,--depth", o.depth, "tokens of context before each pp/tg test")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--sequences", o.sequences,
                 "many-sequence decode: N sequences prefilled and decoding together (e.g. 1,8,32,64)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  app.add_option("--seq-prompt", o.seq_prompt, "prompt tokens per sequence with --sequences")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--seq-gen", o.seq_gen, "tokens each sequence generates with --sequences")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-r,--repetitions", o.repetitions, "timed repetitions of each test")->check(CLI::Range(1, 1000));
  app.add_option("-t,--threads", o.threads, "thread counts to test")->delimiter(',')->check(CLI::Range(1, 1024));
  app.add_option("-b,--batch-size", o.batch_size, "tokens per forward step during prompt processing")
      ->check(CLI::Range(1, 65536));
  app.add_option("--kv-type", o.kv_type, "KV cache type: f16 or f32")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
  app.add_option("--device", o.device, "compute device: cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--gpu", o.gpu_index, "CUDA device index")->check(CLI::Range(0, 64));
  app.add_option("--backend-dir", o.backend_dir,
                 "folder of the CUDA backend module (default: the installed one; a build tree's is <build>/libmodel/backends/cuda)");
  app.add_flag("!--no-parity-check", o.parity_check, "skip the CPU/GPU comparison at load");
  app.add_flag("!--no-pack", o.pack_weights,
               "CPU: run the weights in the file's layout instead of packing them at load for faster kernels");
  app.add_flag("!--no-cuda-graphs", o.cuda_graphs, "launch the GPU decode step eagerly instead of as a CUDA graph");
  app.add_option("-o,--output", output, "md, json or csv")->check(CLI::IsMember({"md", "json", "csv"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    const auto results = lamina::bench::run_benchmarks(o, std::cerr);
    lamina::bench::print_results(std::cout, output, o, results);
  } catch (const std::exception& e) {
    std::cerr << "lamina-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
