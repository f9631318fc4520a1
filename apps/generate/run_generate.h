// The work of lamina-generate once its flags are parsed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lamina/model/sampler.h"

namespace lamina::generate_app {

struct Options {
  std::string model_path;
  std::string prompt;
  std::string prompt_file;
  std::vector<int32_t> prompt_ids;
  int32_t n_predict = 128;
  uint32_t n_ctx = 0;
  int n_threads = 0;
  int batch_size = 512;
  model::SamplerOptions sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool chat = false;
  std::string system;
  std::string chat_template;
  std::string device = "cpu";  // cpu, cuda or auto
  int gpu_index = 0;
  std::string backend_dir;  // folder of the CUDA backend module; empty: the installed one
  bool parity_check = true;
  bool pack_weights = true;  // CPU: rearrange weights for the faster kernels
  double parity_min_cosine = 0;  // 0: by weight type
  bool cuda_graphs = true;
  std::string kv_type = "f16";
  std::string quantize;  // quantize the float matrices at load to this type (e.g. q8_0)
  bool json = false;
  std::string logits_out;
  bool no_display_prompt = false;
};

// Returns the process exit code; throws on errors (the caller prints them).
int run(const Options& options);

}  // namespace lamina::generate_app
