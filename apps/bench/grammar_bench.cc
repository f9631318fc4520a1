// lamina-bench-grammar: decode speed with a grammar constraint beside the
// same generation without one (same model, threads, sampling and seeds), and
// the cost of a token mask with and without its per-state cache. A benchmark,
// not a test: it prints figures for the notes.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/run_flags.h"
#include "lamina/model/generate.h"
#include "lamina/model/grammar.h"
#include "lamina/model/tool_calls.h"

namespace {

using namespace lamina;

struct Totals {
  uint64_t tokens = 0;
  double ms = 0.0;
  double tok_s() const { return ms > 0 ? 1000.0 * static_cast<double>(tokens) / ms : 0.0; }
};

double ms_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lamina-bench-grammar: constrained against unconstrained decode speed"};
  std::string model_path, schema_path, tool_format, prompt = "Write the record as JSON:";
  int n_gen = 128, repetitions = 3;
  apps::RunFlags run;
  model::SamplerOptions sampling;
  app.add_option("-m,--model", model_path, "GGUF model file or Hugging Face model folder")->required();
  app.add_option("--schema", schema_path, "JSON schema file (default: any JSON object)");
  app.add_option("--tool-call", tool_format,
                 "constrain to calls of one function 'f' (its parameters: --schema) in this format, as "
                 "tool_choice required does")
      ->check(CLI::IsMember({"hermes", "llama3", "mistral", "harmony"}));
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-n,--n-gen", n_gen, "tokens to generate per run (at most)")->check(CLI::Range(1, 100000));
  app.add_option("-r,--repetitions", repetitions, "runs (seeds) of each kind")->check(CLI::Range(1, 1000));
  apps::add_run_flags(app, run);
  apps::add_sampling_flags(app, sampling);
  CLI11_PARSE(app, argc, argv);

  try {
    const auto m = model::Model::load(model_path);
    const auto forward = model::make_forward(*m, apps::forward_options(run), apps::device(run), apps::gpu_options(run));
    std::shared_ptr<const model::Grammar> grammar = model::Grammar::json_object();
    std::string schema;
    if (!schema_path.empty()) {
      std::ifstream in(schema_path);
      if (!in) throw std::runtime_error("cannot read " + schema_path);
      std::stringstream text;
      text << in.rdbuf();
      schema = text.str();
      grammar = model::Grammar::from_json_schema(schema);
    }
    std::vector<std::string> markers;
    if (!tool_format.empty()) {
      const model::ToolCallFormat format = tool_format == "hermes"   ? model::ToolCallFormat::Hermes
                                           : tool_format == "llama3" ? model::ToolCallFormat::Llama3Json
                                           : tool_format == "mistral" ? model::ToolCallFormat::Mistral
                                                                      : model::ToolCallFormat::Harmony;
      grammar = model::tool_call_grammar(format, {{"f", schema}}, true);
      markers = model::tool_call_marker_tokens(format);
    }
    std::shared_ptr<const model::GrammarVocabulary> vocab;
    const double vocab_ms =
        ms_of([&] { vocab = model::GrammarVocabulary::from_tokenizer(m->tokenizer(), markers); });

    // One mask from a fresh constraint (the trie walk) and again (the cache).
    auto fresh = std::make_shared<model::TokenConstraint>(grammar, vocab);
    model::GrammarMatcher probe(fresh);
    const double cold_ms = ms_of([&] { probe.allowed(); });
    const double warm_ms = ms_of([&] { probe.allowed(); });
    // Inside a string nearly every token fits: the walk visits the whole trie.
    double string_ms = 0.0;
    model::GrammarMatcher in_string(std::make_shared<model::TokenConstraint>(model::Grammar::json_object(), vocab));
    if (in_string.accept_bytes("{\"")) string_ms = ms_of([&] { in_string.allowed(); });

    const auto ids = m->tokenizer().encode(prompt, true, false);
    Totals free_run, constrained;
    uint64_t finished = 0, grammar_tokens = 0;
    double grammar_ms = 0.0;
    std::vector<float> scratch(static_cast<std::size_t>(vocab->n_vocab()), 0.0f);
    for (int r = 0; r < repetitions; ++r) {
      model::GenerateOptions go;
      go.n_predict = n_gen;
      go.sampling = sampling;
      go.sampling.seed = sampling.seed + static_cast<uint64_t>(r);
      go.stop_at_eog = false;
      const auto a = model::generate(*m, *forward, ids, go);
      free_run.tokens += a.generated_ids.size();
      free_run.ms += a.generate_ms;
      // A fresh constraint per run, as a server request gets: its caches start cold.
      go.stop_at_eog = true;
      go.constraint = std::make_shared<model::TokenConstraint>(grammar, vocab);
      const auto b = model::generate(*m, *forward, ids, go);
      // generate_ms runs from the first sampled token: count the tokens after it.
      constrained.tokens += b.generated_ids.empty() ? 0 : b.generated_ids.size() - 1;
      constrained.ms += b.generate_ms;
      finished += b.finish == model::FinishReason::EndOfGeneration;
      // The grammar's own share, replayed on cold caches: robust to a busy machine.
      model::GrammarMatcher replay(std::make_shared<model::TokenConstraint>(grammar, vocab));
      grammar_ms += ms_of([&] {
        for (int32_t id : b.generated_ids) {
          replay.mask_logits(scratch);
          replay.accept(id);
        }
      });
      grammar_tokens += b.generated_ids.size();
    }
    free_run.tokens -= std::min<uint64_t>(free_run.tokens, static_cast<uint64_t>(repetitions));
    std::printf("device %s (%s), %d threads\n", run.device.c_str(), forward->backend_name().c_str(), run.n_threads);
    std::printf("vocabulary %d tokens, trie built in %.1f ms\n", vocab->n_vocab(), vocab_ms);
    std::printf("first mask %.2f ms (trie walk), cached %.3f ms; json_object inside a string: %.2f ms\n", cold_ms,
                warm_ms, string_ms);
    std::printf("unconstrained: %llu tokens, %.2f tok/s\n", static_cast<unsigned long long>(free_run.tokens),
                free_run.tok_s());
    std::printf("constrained:   %llu tokens, %.2f tok/s (%llu of %d runs ended by the grammar)\n",
                static_cast<unsigned long long>(constrained.tokens), constrained.tok_s(),
                static_cast<unsigned long long>(finished), repetitions);
    std::printf("ratio: %.1f%%\n", 100.0 * constrained.tok_s() / free_run.tok_s());
    const double per_token = grammar_tokens ? grammar_ms / static_cast<double>(grammar_tokens) : 0.0;
    const double step_ms = free_run.tok_s() > 0 ? 1000.0 / free_run.tok_s() : 0.0;
    std::printf("grammar work (mask + advance, cold caches): %.3f ms per token = %.1f%% of a %.2f ms decode step\n",
                per_token, step_ms > 0 ? 100.0 * per_token / step_ms : 0.0, step_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lamina-bench-grammar: %s\n", apps::flag_message(e.what()).c_str());
    return 1;
  }
  return 0;
}
