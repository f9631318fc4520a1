#include "bench_runner.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "lamina/model/forward.h"
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"

namespace lamina::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of all the process's threads so far: on a machine shared with
// other work, what a step costs regardless of the cores it waited for.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::string type_mix(const gguf::GgufFile& file) {
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : file.tensors()) bytes[std::string(gguf::tensor_type_name(t.type))] += t.n_bytes;
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [name, n] : bytes) order.emplace_back(n, name);
  std::sort(order.rbegin(), order.rend());
  std::string s;
  for (const auto& [n, name] : order) s += (s.empty() ? "" : "+") + name;
  return s;
}

// Token ids drawn from the vocabulary; the speed does not depend on which.
std::vector<model::TokenInput> make_tokens(int n, uint32_t n_vocab, uint32_t first_pos, bool logits_last,
                                           uint32_t seq = 0) {
  std::mt19937 rng(1234 + seq);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_vocab) - 1);
  std::vector<model::TokenInput> tokens(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    tokens[static_cast<std::size_t>(i)] = {pick(rng), first_pos + static_cast<uint32_t>(i), seq, false};
  if (logits_last && n > 0) tokens.back().logits = true;
  return tokens;
}

// N sequences' prompts prefilled in one batch, then gen steps of all N
// sequences together (greedy); returns the seconds of both phases.
std::pair<double, double> time_sequences(model::Forward& fwd, uint32_t n_seq, int prompt, int gen, uint32_t n_vocab) {
  std::vector<model::TokenInput> batch;
  for (uint32_t s = 0; s < n_seq; ++s) {
    const auto t = make_tokens(prompt, n_vocab, 0, true, s);
    batch.insert(batch.end(), t.begin(), t.end());
  }
  const auto start = Clock::now();
  std::vector<int32_t> next = fwd.decode_greedy(batch);
  const double prompt_seconds = seconds_since(start);
  const auto gen_start = Clock::now();
  std::vector<model::TokenInput> rows(n_seq);
  for (int step = 0; step < gen; ++step) {
    for (uint32_t s = 0; s < n_seq; ++s) rows[s] = {next.at(s), static_cast<uint32_t>(prompt + step), s, true};
    next = fwd.decode_greedy(rows);
  }
  return {prompt_seconds, seconds_since(gen_start)};
}

double time_prompt(model::Forward& fwd, const std::vector<model::TokenInput>& tokens) {
  const auto start = Clock::now();
  fwd.decode(tokens);
  return seconds_since(start);
}

// Each step yields the next token id (greedy: on a GPU only the id comes back).
double time_generation(model::Forward& fwd, const std::vector<model::TokenInput>& tokens) {
  const auto start = Clock::now();
  for (auto t : tokens) {
    t.logits = true;
    (void)fwd.decode_greedy(std::span(&t, 1));
  }
  return seconds_since(start);
}

}  // namespace

double BenchResult::mean_tps() const {
  double sum = 0.0;
  for (double s : seconds) sum += n_tokens / s;
  return sum / static_cast<double>(seconds.size());
}

double BenchResult::stddev_tps() const {
  if (seconds.size() < 2) return 0.0;
  const double mean = mean_tps();
  double sq = 0.0;
  for (double s : seconds) sq += (n_tokens / s - mean) * (n_tokens / s - mean);
  return std::sqrt(sq / static_cast<double>(seconds.size() - 1));
}

BenchRun run_benchmarks(const BenchOptions& o, std::ostream& progress) {
  BenchRun run;
  const auto load_start = Clock::now();
  const double load_cpu_start = process_cpu_seconds();
  const auto m = model::Model::load(o.model_path);
  run.load_ms = seconds_since(load_start) * 1000.0;
  run.load_cpu_ms = (process_cpu_seconds() - load_cpu_start) * 1000.0;
  run.model = {o.model_path, std::string(m->config().arch->name), type_mix(m->file()), m->file().file_size(),
               m->n_params()};

  const int max_p = *std::max_element(o.n_prompt.begin(), o.n_prompt.end());
  const int max_n = *std::max_element(o.n_gen.begin(), o.n_gen.end());
  const int max_d = *std::max_element(o.depth.begin(), o.depth.end());
  const int max_seqs = o.sequences.empty() ? 1 : *std::max_element(o.sequences.begin(), o.sequences.end());
  const int seq_ctx = o.sequences.empty() ? 1 : o.seq_prompt + o.seq_gen;
  const uint32_t n_ctx = static_cast<uint32_t>(std::max({max_d + max_p + 1, max_d + max_n, seq_ctx, 1}));
  for (int threads : o.threads) {
    apps::RunFlags flags = o.run;
    flags.n_ctx = n_ctx;
    flags.n_threads = threads;
    std::string note;
    const auto setup_start = Clock::now();
    const double setup_cpu_start = process_cpu_seconds();
    const auto fwd_ptr = model::make_forward(*m, apps::forward_options(flags, static_cast<uint32_t>(max_seqs)),
                                             apps::device(flags), apps::gpu_options(flags), &note);
    run.load_ms += seconds_since(setup_start) * 1000.0;
    run.load_cpu_ms += (process_cpu_seconds() - setup_cpu_start) * 1000.0;
    if (!note.empty()) progress << note << '\n';
    model::Forward& fwd = *fwd_ptr;
    auto* cpu_fwd = dynamic_cast<model::CpuForward*>(&fwd);
    const int n_threads = cpu_fwd ? cpu_fwd->n_threads() : 0;
    run.kv_cache_bytes = fwd.kv_cache_bytes();
    run.backend = fwd.backend_name();
    if (max_p > 0) {
      // Time to first token: the longest prompt, then one decode step.
      const auto tokens = make_tokens(max_p, m->config().n_vocab, 0, true);  // before any depth
      const auto start = Clock::now();
      const double cpu_start = process_cpu_seconds();
      const auto first = fwd.decode_greedy(tokens);
      const model::TokenInput next{first.at(0), static_cast<uint32_t>(max_p), 0, true};
      (void)fwd.decode_greedy(std::span(&next, 1));
      run.first_token_ms = seconds_since(start) * 1000.0;
      run.first_token_cpu_ms = (process_cpu_seconds() - cpu_start) * 1000.0;
    }
    // Throughput is measured on the packed weights (load and first token
    // above include the packing that runs beside them).
    if (cpu_fwd) cpu_fwd->finish_background_packing();
    const uint32_t n_vocab = m->config().n_vocab;
    // Each test runs after `depth` tokens of context, prefilled once per
    // depth (a repetition rewrites the same later positions).
    auto measure = [&](const std::string& name, int n, bool prompt, int depth) {
      if (n <= 0) return;
      BenchResult r{name + std::to_string(n) + (depth > 0 ? "@d" + std::to_string(depth) : ""), n_threads, n, {}};
      const auto tokens = make_tokens(n, n_vocab, static_cast<uint32_t>(depth), prompt);
      progress << "  " << r.test << " t=" << r.threads << " warm-up" << std::flush;
      prompt ? time_prompt(fwd, tokens) : time_generation(fwd, tokens);
      for (int rep = 0; rep < o.repetitions; ++rep) {
        r.seconds.push_back(prompt ? time_prompt(fwd, tokens) : time_generation(fwd, tokens));
        progress << '.' << std::flush;
      }
      progress << '\n';
      run.results.push_back(std::move(r));
    };
    for (int depth : o.depth) {
      if (depth > 0) (void)fwd.decode(make_tokens(depth, n_vocab, 0, true));
      for (int p : o.n_prompt) measure("pp", p, true, depth);
      for (int n : o.n_gen) measure("tg", n, false, depth);
    }
    for (int n_seq : o.sequences) {
      BenchResult pp{"pp" + std::to_string(o.seq_prompt) + "@s" + std::to_string(n_seq), n_threads,
                     o.seq_prompt * n_seq, {}};
      BenchResult tg{"tg" + std::to_string(o.seq_gen) + "@s" + std::to_string(n_seq), n_threads, o.seq_gen * n_seq, {}};
      progress << "  " << n_seq << " sequences, pp" << o.seq_prompt << " + tg" << o.seq_gen << " warm-up" << std::flush;
      (void)time_sequences(fwd, static_cast<uint32_t>(n_seq), o.seq_prompt, o.seq_gen, n_vocab);
      for (int rep = 0; rep < o.repetitions; ++rep) {
        const auto [prompt_s, gen_s] =
            time_sequences(fwd, static_cast<uint32_t>(n_seq), o.seq_prompt, o.seq_gen, n_vocab);
        pp.seconds.push_back(prompt_s);
        tg.seconds.push_back(gen_s);
        progress << '.' << std::flush;
      }
      progress << '\n';
      run.results.push_back(std::move(pp));
      run.results.push_back(std::move(tg));
    }
    run.device_memory = fwd.device_memory_report();
  }
  run.peak_rss_bytes = peak_rss_bytes();
  return run;
}

}  // namespace lamina::bench
