#include "run_flags.h"

#include <array>
#include <cmath>
#include <vector>
#include <stdexcept>
#include <utility>

namespace lamina::apps {

void add_run_flags(CLI::App& app, RunFlags& f, unsigned which) {
  if (which & kCtxSizeFlag)
    app.add_option("-c,--ctx-size", f.n_ctx, "context per sequence (0: the model's, at most 4096)")
        ->check(CLI::Range(0, 1 << 24));
  if (which & kThreadsFlag) app.add_option("-t,--threads", f.n_threads, "compute threads (0: all)")->check(CLI::Range(0, 1024));
  app.add_option("-b,--batch-size", f.batch_size, "tokens per forward step")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--kv-type", f.kv_type, "KV cache type (q8_0: blocks of 32 int8 and a scale, CPU only)")
      ->check(CLI::IsMember({"f32", "f16", "q8_0"}))
      ->capture_default_str();
  app.add_option("--device", f.device, "compute device: cpu, cuda or auto (cuda when it works)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  app.add_option("--gpu", f.gpu_index, "CUDA device index")->check(CLI::Range(0, 64));
  app.add_option("--split-mode", f.split_mode,
                 "several GPUs: none (one GPU, --gpu) or layer (consecutive layers per GPU of --gpus)")
      ->check(CLI::IsMember({"none", "layer"}))
      ->capture_default_str();
  app.add_option("--gpus", f.gpus,
                 "with --split-mode layer: the CUDA devices, in layer order (default: all); with --tensor-parallel: "
                 "the devices in rank order (default: the first N)")
      ->delimiter(',')
      ->check(CLI::Range(0, 64));
  app.add_option("--tensor-parallel", f.tensor_parallel,
                 "GPUs the heads, FFN columns, KV cache and vocabulary are split over (1, 2 or 4; results "
                 "bit-identical for each; 0: off)")
      ->check(CLI::IsMember({0u, 1u, 2u, 4u}))
      ->excludes("--split-mode");
  app.add_flag("!--no-parity-check", f.parity_check, "skip the CPU/GPU comparison at load");
  app.add_option("--backend-dir", f.backend_dir,
                 "folder of the CUDA backend module (default: the installed one; a build tree's is "
                 "<build>/libmodel/backends/cuda)");
  app.add_flag("!--no-pack", f.pack_weights,
               "CPU: run the weights in the file's layout instead of packing them for faster kernels");
  app.add_flag("!--pack-at-load", f.pack_in_background,
               "CPU: pack every matrix at load instead of Q4_K/Q5_K ones in the background after the first steps "
               "(same outputs)");
  if (which & kCudaTuningFlags) {
    app.add_option("--parity-min-cosine", f.parity_min_cosine,
                   "logits cosine the GPU must reach against the CPU at load (default: 0.9999 for float weights, "
                   "0.99 for quantized)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_flag("!--no-cuda-graphs", f.cuda_graphs, "launch the GPU decode step eagerly instead of as a CUDA graph");
  }
}

void add_kv_size_flag(CLI::App& app, RunFlags& f) {
  app.add_option("--kv-size", f.kv_size,
                 "KV cache positions shared by all sequences, in blocks of 256 (0: every slot its whole context); "
                 "idle slots hold none, and a shared prompt prefix is held once")
      ->check(CLI::Range(0u, 1u << 30));
}

model::ForwardOptions forward_options(const RunFlags& f, uint32_t n_seq) {
  model::ForwardOptions fo;
  fo.n_ctx = f.n_ctx;
  fo.n_seq = n_seq;
  fo.n_threads = f.n_threads;
  fo.max_batch = f.batch_size;
  fo.pack_weights = f.pack_weights;
  fo.pack_in_background = f.pack_in_background;
  fo.kv_type = f.kv_type == "f16"    ? model::KvType::F16
                : f.kv_type == "q8_0" ? model::KvType::Q8_0
                                      : model::KvType::F32;
  fo.kv_blocks = model::kv_blocks_for(f.kv_size);
  return fo;
}

model::GpuOptions gpu_options(const RunFlags& f) {
  model::GpuOptions gpu;
  gpu.device = f.gpu_index;
  gpu.split = f.split_mode == "layer" ? model::SplitMode::Layer : model::SplitMode::None;
  gpu.devices = f.gpus;
  gpu.tensor_parallel = f.tensor_parallel;
  gpu.parity_check = f.parity_check;
  gpu.parity_min_cosine = f.parity_min_cosine;
  gpu.use_graphs = f.cuda_graphs;
  gpu.backend_dir = f.backend_dir;
  return gpu;
}

// The flag's check admits only names parse_device knows.
model::Device device(const RunFlags& f) { return model::parse_device(f.device).value(); }

void add_sampling_flags(CLI::App& app, model::SamplerOptions& s, bool server_defaults) {
  const std::string what = server_defaults ? "default " : "";
  if (!server_defaults) app.add_option("-s,--seed", s.seed, "random seed");
  // OpenAI's API takes temperatures up to 2.
  app.add_option("--temp", s.temperature, what + "temperature (0: greedy)")
      ->check(CLI::Range(0.0, server_defaults ? 2.0 : 100.0))
      ->capture_default_str();
  app.add_option("--top-k", s.top_k, what + "top-k (0: off)")->check(CLI::Range(0, 1 << 30))->capture_default_str();
  app.add_option("--top-p", s.top_p, what + "top-p (1: off)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--min-p", s.min_p, what + "min-p (0: off)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--repeat-penalty", s.repeat_penalty, what + "repetition penalty (1: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  if (server_defaults) return;
  app.add_option("--presence-penalty", s.presence_penalty, "presence penalty (0: off)");
  app.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (0: off)");
  app.add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalties look back at (-1: all)")
      ->check(CLI::Range(-1, 1 << 30));
  // llama.cpp's spelling: TOKEN_ID followed by a signed bias, e.g. 15043+1 or 2-100.
  app.add_option_function<std::vector<std::string>>(
         "--logit-bias",
         [&s](const std::vector<std::string>& items) {
           for (const std::string& item : items) s.logit_bias.push_back(parse_logit_bias(item));
         },
         "add a bias to a token's logit: ID+BIAS or ID-BIAS, -100 to 100 (repeatable; -100 bans, +100 forces)")
      ->type_name("ID(+|-)BIAS");
}

model::TokenBias parse_logit_bias(const std::string& item) {
  const std::size_t sign = item.find_first_of("+-");
  const auto fail = [&] {
    return CLI::ValidationError("--logit-bias", "'" + item + "' is not TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1)");
  };
  if (sign == 0 || sign == std::string::npos || item.find_first_not_of("0123456789") != sign) throw fail();
  try {
    std::size_t used = 0;
    const float bias = std::stof(item.substr(sign), &used);
    if (used != item.size() - sign || !(std::abs(bias) <= model::kMaxLogitBias)) throw fail();
    return {std::stoi(item.substr(0, sign)), bias};
  } catch (const std::logic_error&) {
    throw fail();
  }
}

void add_chat_template_flag(CLI::App& app, std::string& family) {
  app.add_option("--chat-template", family,
                 "chat format instead of the model's template: chatml, llama2, llama3, mistral, phi3, gemma");
}

model::ChatPrompt chat_prompt(const model::Model& model, const std::string& family) {
  try {
    return model::ChatPrompt(model, family);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--chat-template: ") + e.what());
  }
}

std::string flag_message(std::string_view message) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kFlags{{
      {"ForwardOptions::n_ctx", "--ctx-size"},
      {"GpuOptions::parity_check = false", "--no-parity-check"},
      {"LoadOptions::quantize", "--quantize"},
  }};
  std::string out(message);
  for (const auto& [field, flag] : kFlags) {
    for (std::size_t at = out.find(field); at != std::string::npos; at = out.find(field, at + flag.size()))
      out.replace(at, field.size(), flag);
  }
  return out;
}

}  // namespace lamina::apps
