#include "run_generate.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lamina/model/chat.h"
#include "lamina/model/chat_template.h"
#include "lamina/model/forward.h"
#include "lamina/model/generate.h"
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"
#include "lamina/quant/format.h"

namespace lamina::generate_app {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the prompt file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<model::Model> load_model(const std::string& path, const std::string& quantize) {
  model::LoadOptions lo;
  if (!quantize.empty()) {
    lo.quantize = quant::format_from_name(quantize);
    if (!lo.quantize || !quant::format_traits(*lo.quantize).is_weight_format)
      throw std::runtime_error("--quantize: '" + quantize + "' is not a weight type (e.g. q8_0, q4_k, q6_k, f16)");
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (tty && !ec && size > (std::uintmax_t{256} << 20)) {
    lo.on_progress = [](double f) {
      std::fprintf(stderr, "\rloading model: %3d%%", static_cast<int>(f * 100.0));
      if (f >= 1.0) std::fprintf(stderr, "\n");
    };
  }
  return model::Model::load(path, lo);
}

std::vector<int32_t> prompt_tokens(const Options& o, const model::Model& m) {
  for (int32_t id : o.prompt_ids) {
    if (id < 0 || static_cast<uint32_t>(id) >= m.config().n_vocab)
      throw std::runtime_error("--prompt-ids: token id " + std::to_string(id) + " is outside the vocabulary (" +
                               std::to_string(m.config().n_vocab) + ")");
  }
  if (!o.prompt_ids.empty()) return o.prompt_ids;
  const model::Tokenizer& tok = m.tokenizer();
  std::string text = o.prompt_file.empty() ? o.prompt : read_file(o.prompt_file);
  if (!o.chat) return tok.encode(text, /*add_special=*/true, /*parse_special=*/true);

  std::vector<model::ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  messages.push_back({"user", text});
  std::string rendered;
  if (!o.chat_template.empty()) {
    // An explicit family overrides the model's own template.
    const auto format = model::chat_format_by_name(o.chat_template);
    if (!format) throw std::runtime_error("--chat-template: unknown family '" + o.chat_template + "'");
    const std::string bos = tok.bos_id() >= 0 ? tok.token_to_piece(tok.bos_id()) : std::string();
    const std::string eos = tok.eos_id() >= 0 ? tok.token_to_piece(tok.eos_id()) : std::string();
    rendered = model::render_chat(*format, messages, true, bos, eos);
  } else {
    const model::ModelChat chat(m);
    if (!chat.has_template()) throw std::runtime_error("the model has no tokenizer.chat_template; pass --chat-template");
    rendered = chat.render(messages, /*add_generation_prompt=*/true);
  }
  std::vector<int32_t> ids = tok.encode(rendered, false, true);
  if (tok.add_bos() && tok.bos_id() >= 0 && (ids.empty() || ids.front() != tok.bos_id()))
    ids.insert(ids.begin(), tok.bos_id());
  return ids;
}

void write_logits(const std::string& path, const std::vector<float>& logits) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write the logits");
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out) throw std::runtime_error(path + ": write failed");
}

double per_second(std::size_t n, double ms) { return ms > 0 ? static_cast<double>(n) * 1000.0 / ms : 0.0; }

}  // namespace

int run(const Options& o) {
  const auto load_start = Clock::now();
  const auto m = load_model(o.model_path, o.quantize);

  const std::vector<int32_t> ids = prompt_tokens(o, *m);
  if (ids.empty()) throw std::runtime_error("the prompt is empty and the model adds no BOS token");

  model::ForwardOptions fo;
  fo.n_ctx = o.n_ctx;
  fo.n_threads = o.n_threads;
  fo.pack_weights = o.pack_weights;
  fo.max_batch = static_cast<uint32_t>(o.batch_size);
  fo.kv_type = o.kv_type == "f16" ? model::KvType::F16 : model::KvType::F32;
  model::GpuOptions gpu;
  gpu.device = o.gpu_index;
  gpu.backend_dir = o.backend_dir;
  gpu.parity_check = o.parity_check;
  gpu.parity_min_cosine = o.parity_min_cosine;
  gpu.use_graphs = o.cuda_graphs;
  std::string device_note;
  const auto forward_ptr = model::make_forward(*m, fo, *model::parse_device(o.device), gpu, &device_note);
  if (!device_note.empty()) std::fprintf(stderr, "%s\n", device_note.c_str());
  model::Forward& forward = *forward_ptr;
  // Load time includes the upload to the GPU and its parity check.
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();

  model::GenerateOptions go;
  go.n_predict = o.n_predict;
  go.sampling = o.sampling;
  go.stop = o.stop;
  go.stop_at_eog = !o.ignore_eos;
  go.want_prompt_logits = !o.logits_out.empty();

  model::TextCallback stream;
  if (!o.json) {
    if (!o.no_display_prompt) {
      for (int32_t id : ids) std::cout << m->tokenizer().token_to_piece(id, /*special=*/false);
    }
    std::cout.flush();
    stream = [](std::string_view piece) { std::cout << piece << std::flush; };
  }
  const auto result = model::generate(*m, forward, ids, go, stream);
  if (!o.logits_out.empty()) write_logits(o.logits_out, result.prompt_logits);

  const double pp = per_second(result.prompt_ids.size(), result.prompt_ms);
  const double tg = per_second(result.generated_ids.size(), result.generate_ms);
  if (o.json) {
    nlohmann::json doc;
    doc["prompt_ids"] = result.prompt_ids;
    doc["generated_ids"] = result.generated_ids;
    doc["text"] = result.text;
    doc["stop_reason"] = std::string(model::stop_reason_name(result.stop_reason));
    doc["timings"] = {{"load_ms", load_ms}, {"prompt_tokens_per_s", pp}, {"gen_tokens_per_s", tg}};
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    std::cout << '\n';
  }
  std::cout.flush();
  std::fprintf(stderr, "load %.1f ms | prompt %zu tokens, %.1f tok/s | generated %zu tokens, %.1f tok/s | %s\n",
               load_ms, result.prompt_ids.size(), pp, result.generated_ids.size(), tg,
               forward.backend_name().c_str());
  return std::cout ? 0 : 1;
}

}  // namespace lamina::generate_app
