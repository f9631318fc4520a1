// The GPU forward pass against the CPU path on every model of the test data:
// the same greedy ids, prompt logits within a cosine of 0.9999 (the GPU
// quantizes activations exactly like the CPU kernels, so only the f32
// summation order differs), batch invariance, graphs vs eager, the parity
// gate and clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <iostream>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lamina/cudaexec/device.h"
#include "lamina/model/forward.h"
#include "lamina/model/generate.h"
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
const fs::path kData = LAMINA_TESTDATA_DIR;

std::vector<fs::path> test_models() {
  std::vector<fs::path> paths;
  for (const char* name : {"models/stories260K.gguf", "models/TinyStories-656K-Q8_0.gguf"})
    if (fs::exists(kData / name)) paths.push_back(kData / name);
  // The architectures the engine runs (archs/ also holds newer ones).
  for (const char* arch : {"llama", "llama3", "qwen2", "qwen3", "qwen3moe", "phi3", "gpt2", "gemma2", "gemma3",
                           "mixtral", "gptoss", "deepseek2"})
    for (const char* prec : {"f32", "q8_0", "q4_k_m", "mxfp4_moe"}) {
      const fs::path p = kData / "archs" / (std::string(arch) + "." + prec + ".gguf");
      if (fs::exists(p)) paths.push_back(p);
    }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Spread-out token ids of the vocabulary, starting at BOS when there is one.
std::vector<int32_t> prompt_for(const Model& m, std::size_t n) {
  const auto V = static_cast<int32_t>(m.config().n_vocab);
  std::vector<int32_t> ids;
  const int32_t bos = m.tokenizer().bos_id();
  if (bos >= 0) ids.push_back(bos);
  for (std::size_t i = ids.size(); i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + 13) % V));
  return ids;
}

std::vector<TokenInput> prompt_batch(const std::vector<int32_t>& ids, uint32_t seq, bool all_logits) {
  std::vector<TokenInput> b;
  for (std::size_t i = 0; i < ids.size(); ++i)
    b.push_back({ids[i], static_cast<uint32_t>(i), seq, all_logits || i + 1 == ids.size()});
  return b;
}

std::vector<int32_t> greedy(Forward& fwd, const std::vector<int32_t>& prompt, int n) {
  std::vector<int32_t> out = fwd.decode_greedy(prompt_batch(prompt, 0, false));
  while (static_cast<int>(out.size()) < n) {
    const TokenInput t{out.back(), static_cast<uint32_t>(prompt.size() + out.size() - 1), 0, true};
    out.push_back(fwd.decode_greedy(std::span(&t, 1)).at(0));
  }
  return out;
}

double cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

ForwardOptions cpu_options() { return {.n_ctx = 128, .n_seq = 4, .kv_type = KvType::F16, .n_threads = 1}; }
ForwardOptions gpu_options() { return {.n_ctx = 128, .n_seq = 4}; }
// The backend module of this build tree; where the tree is absent (a bundle
// of tools/gpu/bundle.sh on a GPU machine), the one beside libmodel, where
// an install (and a bundle) has it.
std::string backend_dir() { return fs::exists(LAMINA_CUDA_BACKEND_DIR) ? LAMINA_CUDA_BACKEND_DIR : ""; }
GpuOptions this_build() { return {.backend_dir = backend_dir()}; }
GpuOptions no_gate() { return {.parity_check = false, .backend_dir = backend_dir()}; }

TEST(GpuForward, MatchesCpuOnEveryTestModel) {
  const auto models = test_models();
  if (models.empty()) GTEST_SKIP() << "no test data at " << kData;
  for (const auto& path : models) {
    SCOPED_TRACE(path.filename().string());
    const auto m = Model::load(path.string());
    CpuForward cpu(*m, cpu_options());
    const auto gpu = make_gpu_forward(*m, gpu_options(), no_gate());
    const auto ids = prompt_for(*m, 12);
    const std::size_t V = m->config().n_vocab;
    const auto cpu_span = cpu.decode(prompt_batch(ids, 1, true));
    const std::vector<float> cpu_logits(cpu_span.begin(), cpu_span.end());
    const auto gpu_span = gpu->decode(prompt_batch(ids, 1, true));
    const std::vector<float> gpu_logits(gpu_span.begin(), gpu_span.end());
    ASSERT_EQ(cpu_logits.size(), ids.size() * V);
    ASSERT_EQ(gpu_logits.size(), cpu_logits.size());
    // Float weights: summation order only. Quantized: int8 rounding flips
    // (see default_parity_cosine); these small models stay above 0.9998.
    const double min_cosine = default_parity_cosine(*m) >= 0.9999 ? 0.9999 : 0.999;
    double lowest = 1.0;
    for (std::size_t r = 0; r < ids.size(); ++r) {
      const double c = cosine(cpu_logits.data() + r * V, gpu_logits.data() + r * V, V);
      EXPECT_GE(c, min_cosine) << "prompt position " << r;
      lowest = std::min(lowest, c);
    }
    std::printf("%s: lowest prompt cosine %.7f\n", path.filename().string().c_str(), lowest);
    const auto cpu_ids = greedy(cpu, ids, 24);
    if (min_cosine > 0.9999 - 1e-12) {
      // Float weights: free-running greedy decoding gives the same ids.
      EXPECT_EQ(cpu_ids, greedy(*gpu, ids, 24));
      continue;
    }
    // Quantized weights: the CPU's continuation fed to both sides (teacher
    // forcing); the GPU picks the CPU's token wherever the CPU's margin
    // exceeds twice the difference between the two rows.
    std::vector<int32_t> seq_ids = ids;
    seq_ids.insert(seq_ids.end(), cpu_ids.begin(), cpu_ids.end() - 1);
    const auto c_all = cpu.decode(prompt_batch(seq_ids, 2, true));
    const std::vector<float> cpu_rows(c_all.begin(), c_all.end());
    const auto g_all = gpu->decode(prompt_batch(seq_ids, 2, true));
    const std::vector<float> gpu_rows(g_all.begin(), g_all.end());
    int decided = 0;
    for (std::size_t i = 0; i < cpu_ids.size(); ++i) {
      const std::size_t row = ids.size() - 1 + i;
      const float* c = cpu_rows.data() + row * V;
      const float* g = gpu_rows.data() + row * V;
      float diff = 0, best = -INFINITY, second = -INFINITY;
      for (std::size_t v = 0; v < V; ++v) {
        diff = std::max(diff, std::fabs(c[v] - g[v]));
        if (c[v] > best) {
          second = best;
          best = c[v];
        } else if (c[v] > second) {
          second = c[v];
        }
      }
      EXPECT_GE(cosine(c, g, V), min_cosine) << "generated step " << i;
      if (best - second <= 2 * diff) continue;
      ++decided;
      const auto gpu_choice = static_cast<int32_t>(std::max_element(g, g + V) - g);
      EXPECT_EQ(gpu_choice, cpu_ids[i]) << "generated step " << i << ", CPU margin " << best - second;
    }
    EXPECT_GE(decided, 12) << "too few steps with a clear margin to judge";
  }
}

TEST(GpuForward, ReferenceGreedyTextOfStories260K) {
  const fs::path path = kData / "models/stories260K.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto m = Model::load(path.string());
  const auto gpu = make_gpu_forward(*m, {.n_ctx = 256}, this_build());
  GenerateOptions options;
  options.n_predict = 200;
  options.sampling.temperature = 0.0f;
  options.stop_at_eog = false;
  // Decoded as Hugging Face decodes Llama 2 after the BOS prompt: llama2.c's text, byte for byte.
  const std::string text = generate(*m, *gpu, {m->tokenizer().bos_id()}, options).text;
  std::ifstream in(kData / "models/stories260K.expected-greedy-200.txt", std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << kData / "models/stories260K.expected-greedy-200.txt";
  const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, expected);
}

// Sequences decoded together give the bits they give alone; graph replays
// give the bits of eager launches.
TEST(GpuForward, BatchInvariantAndGraphsEqualEager) {
  const fs::path path = kData / "archs/qwen2.q4_k_m.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto m = Model::load(path.string());
  const auto graphs = make_gpu_forward(*m, gpu_options(), no_gate());
  const auto eager = make_gpu_forward(*m, gpu_options(), {.use_graphs = false, .parity_check = false, .backend_dir = backend_dir()});
  const std::size_t V = m->config().n_vocab;
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t s = 0; s < 3; ++s) {
    auto ids = prompt_for(*m, 5 + 3 * s);
    ids.back() = static_cast<int32_t>(100 + s);
    prompts.push_back(ids);
  }
  // Alone: each sequence's prompt, then 6 decode steps.
  std::vector<std::vector<float>> alone(3);
  std::vector<std::vector<int32_t>> next(3);
  for (uint32_t s = 0; s < 3; ++s) {
    for (Forward* f : {graphs.get(), eager.get()}) {
      auto l = f->decode(prompt_batch(prompts[s], s, false));
      std::vector<float> trail(l.begin(), l.end());
      int32_t tok = static_cast<int32_t>(std::max_element(trail.begin(), trail.end()) - trail.begin());
      std::vector<float> record;
      for (uint32_t step = 0; step < 6; ++step) {
        const TokenInput t{tok, static_cast<uint32_t>(prompts[s].size() + step), s, true};
        auto ls = f->decode(std::span(&t, 1));
        record.insert(record.end(), ls.begin(), ls.end());
        tok = static_cast<int32_t>(std::max_element(ls.begin(), ls.end()) - ls.begin());
      }
      if (f == graphs.get()) {
        alone[s] = record;
      } else {
        EXPECT_EQ(record, alone[s]) << "eager vs graph, sequence " << s;
      }
    }
  }
  // Together: all three prompts in one batch, then decode steps of 3 rows.
  std::vector<TokenInput> batch;
  for (uint32_t s = 0; s < 3; ++s)
    for (const auto& t : prompt_batch(prompts[s], s, false)) batch.push_back(t);
  auto l = graphs->decode(batch);
  std::vector<int32_t> tok(3);
  for (uint32_t s = 0; s < 3; ++s)
    tok[s] = static_cast<int32_t>(std::max_element(l.begin() + s * V, l.begin() + (s + 1) * V) - (l.begin() + s * V));
  for (uint32_t step = 0; step < 6; ++step) {
    std::vector<TokenInput> rows;
    for (uint32_t s = 0; s < 3; ++s) rows.push_back({tok[s], static_cast<uint32_t>(prompts[s].size() + step), s, true});
    auto ls = graphs->decode(rows);
    for (uint32_t s = 0; s < 3; ++s) {
      const std::vector<float> row(ls.begin() + s * V, ls.begin() + (s + 1) * V);
      const std::vector<float> want(alone[s].begin() + step * V, alone[s].begin() + (step + 1) * V);
      EXPECT_EQ(row, want) << "sequence " << s << " step " << step;
      tok[s] = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    }
  }
}

// Logits of the marked positions of sequence `seq` when its prompt `ids`
// runs in pieces of `chunk` tokens, each piece in one batch with the next
// pieces of the `others` (their own prompts in other slots, cut the same way).
std::vector<float> chunked_logits(Forward& fwd, const std::vector<int32_t>& ids, uint32_t seq,
                                  const std::vector<uint32_t>& marked, std::size_t chunk,
                                  const std::vector<std::vector<int32_t>>& others, std::size_t V) {
  std::vector<float> out;
  std::vector<std::size_t> done(others.size(), 0);
  for (std::size_t start = 0; start < ids.size(); start += chunk) {
    std::vector<TokenInput> batch;
    // Neighbours first and last, so the target's rows sit mid-batch.
    for (std::size_t k = 0; k < others.size(); ++k) {
      const std::size_t take = std::min(others[k].size() - done[k], (chunk * (k + 3)) / 4 + k % 3);
      for (std::size_t i = 0; i < take && k % 2 == 0; ++i, ++done[k])
        batch.push_back({others[k][done[k]], static_cast<uint32_t>(done[k]), static_cast<uint32_t>(k + 1), false});
    }
    const std::size_t first_target = batch.size();
    for (std::size_t i = start; i < std::min(ids.size(), start + chunk); ++i) {
      const bool wanted = std::find(marked.begin(), marked.end(), i) != marked.end();
      batch.push_back({ids[i], static_cast<uint32_t>(i), seq, wanted});
    }
    for (std::size_t k = 0; k < others.size(); ++k) {
      const std::size_t take = std::min(others[k].size() - done[k], (chunk * (k + 3)) / 4 + k % 3);
      for (std::size_t i = 0; i < take && k % 2 == 1; ++i, ++done[k])
        batch.push_back({others[k][done[k]], static_cast<uint32_t>(done[k]), static_cast<uint32_t>(k + 1), false});
    }
    (void)first_target;
    const auto l = fwd.decode(batch);
    out.insert(out.end(), l.begin(), l.end());
  }
  EXPECT_EQ(out.size(), marked.size() * V);
  return out;
}

// A sequence's logits do not depend on how its prompt is cut into chunks
// (the whole prompt, 512, 64, 7 or 1 token per step), on the sequences that
// share its batches (63 others of other lengths), or on whether its prefix
// came from the cache: every marked position (across attention's 256-key
// spans and the chunk boundaries) bit for bit. Gemma 2 adds a sliding
// window and soft-capped scores.
TEST(GpuForward, LogitsIndependentOfChunkingNeighboursAndCache) {
  for (const char* name : {"archs/qwen2.q4_k_m.gguf", "archs/gemma2.q8_0.gguf"}) {
    const fs::path path = kData / name;
    if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
    SCOPED_TRACE(name);
    const auto m = Model::load(path.string());
    const std::size_t V = m->config().n_vocab;
    const auto gpu = make_gpu_forward(*m, {.n_ctx = 768, .n_seq = 64, .max_batch = 1024}, no_gate());
    const std::vector<int32_t> ids = prompt_for(*m, 600);
    const std::vector<uint32_t> marked = {0, 1, 7, 63, 64, 200, 255, 256, 257, 400, 511, 512, 513, 599};

    const std::vector<float> whole = chunked_logits(*gpu, ids, 0, marked, ids.size(), {}, V);
    std::vector<std::vector<int32_t>> others;
    for (uint32_t k = 0; k < 63; ++k) {
      auto o = prompt_for(*m, 20 + 11 * k);
      o.back() = static_cast<int32_t>((k * 37 + 5) % V);
      others.push_back(o);
    }
    for (std::size_t chunk : {512u, 64u, 7u, 1u}) {
      const auto alone = chunked_logits(*gpu, ids, 0, marked, chunk, {}, V);
      EXPECT_TRUE(alone == whole) << "prompt in pieces of " << chunk;
    }
    for (std::size_t chunk : {512u, 64u, 7u}) {
      const auto beside = chunked_logits(*gpu, ids, 0, marked, chunk, others, V);
      EXPECT_TRUE(beside == whole) << "prompt in pieces of " << chunk << " beside 63 sequences";
    }
    // Cached prefix: slot 0 holds the prompt; a new prompt sharing its first
    // 300 tokens continues there, and from scratch in slot 1.
    std::vector<int32_t> fresh = ids;
    for (std::size_t i = 300; i < fresh.size(); ++i) fresh[i] = static_cast<int32_t>((i * 13 + 7) % V);
    (void)chunked_logits(*gpu, ids, 0, {}, ids.size(), {}, V);
    std::vector<TokenInput> rest;
    for (std::size_t i = 300; i < fresh.size(); ++i) rest.push_back({fresh[i], static_cast<uint32_t>(i), 0, i == 599});
    const auto cached_span = gpu->decode(rest);
    const std::vector<float> cached(cached_span.begin(), cached_span.end());
    const auto scratch = chunked_logits(*gpu, fresh, 1, {599}, fresh.size(), {}, V);
    EXPECT_TRUE(cached == scratch) << "continuing after a cached prefix";
  }
}

TEST(GpuForward, ParityGateReportsAgreement) {
  const fs::path path = kData / "archs/llama.q8_0.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto m = Model::load(path.string());
  ParityReport r;
  const auto gpu = make_gpu_forward(*m, gpu_options(), this_build(), &r);
  EXPECT_GE(r.cosine, 0.9999) << r.summary();
  EXPECT_EQ(r.cpu_argmax, r.gpu_argmax);
  EXPECT_EQ(r.first_divergent_layer, -2) << r.summary();
}

TEST(GpuForward, ClearErrorWhenTheCacheDoesNotFit) {
  const fs::path path = kData / "models/stories260K.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto m = Model::load(path.string());
  try {
    (void)make_gpu_forward(*m, {.n_ctx = 1u << 20, .n_seq = 4096}, no_gate());
    FAIL() << "expected an error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
}

TEST(GpuForward, RejectsBadTokensPositionsAndSlots) {
  const fs::path path = kData / "models/stories260K.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto m = Model::load(path.string());
  const auto gpu = make_gpu_forward(*m, {.n_ctx = 32, .n_seq = 2}, no_gate());
  const TokenInput bad_token{static_cast<int32_t>(m->config().n_vocab), 0, 0, true};
  const TokenInput bad_pos{1, 32, 0, true};
  const TokenInput bad_seq{1, 0, 2, true};
  EXPECT_THROW(gpu->decode(std::span(&bad_token, 1)), ModelError);
  EXPECT_THROW(gpu->decode(std::span(&bad_pos, 1)), ModelError);
  EXPECT_THROW(gpu->decode(std::span(&bad_seq, 1)), ModelError);
}

// A pool shared through block tables gives the bits of slots that own their
// runs: slot 0's blocks out of order, slot 1 going on from slot 0's first 300
// positions (one block shared, the next one's first 44 positions copied),
// then slot 0 going on unharmed by slot 1's writes.
TEST(GpuForward, BlockTablesShareAPrefixBitForBit) {
  for (const char* name : {"archs/qwen2.q4_k_m.gguf", "archs/deepseek2.q4_k_m.gguf"}) {
    const fs::path path = kData / name;
    if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
    SCOPED_TRACE(name);
    const auto m = Model::load(path.string());
    const std::size_t V = m->config().n_vocab;
    const auto own = make_gpu_forward(*m, {.n_ctx = 768, .n_seq = 2}, no_gate());
    const auto pooled = make_gpu_forward(*m, {.n_ctx = 768, .n_seq = 3, .kv_blocks = 8}, no_gate());
    EXPECT_EQ(pooled->kv_blocks(), 8u);
    EXPECT_EQ(pooled->kv_cache_bytes(), 8 * pooled->kv_block_bytes());
    const std::vector<int32_t> ids = prompt_for(*m, 600);
    std::vector<int32_t> fresh = ids;
    for (std::size_t i = 300; i < fresh.size(); ++i) fresh[i] = static_cast<int32_t>((i * 13 + 7) % V);

    const std::vector<uint32_t> marked = {0, 255, 256, 299, 300, 511, 512, 599};
    pooled->set_block_table(0, std::vector<uint32_t>{5, 2, 7});
    EXPECT_TRUE(chunked_logits(*pooled, ids, 0, marked, 64, {}, V) == chunked_logits(*own, ids, 0, marked, 64, {}, V))
        << "a prompt in blocks out of order";

    const std::vector<uint32_t> later = {300, 511, 512, 599};
    pooled->copy_kv_block(2, 3, 300 - 256);
    pooled->set_block_table(1, std::vector<uint32_t>{5, 3, 4});
    std::vector<TokenInput> rest;
    for (uint32_t i = 300; i < fresh.size(); ++i)
      rest.push_back({fresh[i], i, 1, std::find(later.begin(), later.end(), i) != later.end()});
    const auto shared_span = pooled->decode(rest);
    const std::vector<float> shared(shared_span.begin(), shared_span.end());
    EXPECT_TRUE(shared == chunked_logits(*own, fresh, 1, later, fresh.size(), {}, V)) << "going on from shared blocks";

    const TokenInput next{static_cast<int32_t>(17 % V), 600, 0, true};
    const auto a = pooled->decode(std::span(&next, 1));
    const std::vector<float> after(a.begin(), a.end());
    const auto b = own->decode(std::span(&next, 1));
    EXPECT_TRUE(after == std::vector<float>(b.begin(), b.end())) << "the sharing slot changed the shared blocks";

    const TokenInput unmapped{1, 0, 2, true};
    EXPECT_THROW(pooled->decode(std::span(&unmapped, 1)), ModelError);
    EXPECT_THROW(pooled->set_block_table(2, std::vector<uint32_t>{8}), ModelError);
    EXPECT_THROW(pooled->set_block_table(2, std::vector<uint32_t>{0, 1, 2, 3}), ModelError);
    EXPECT_THROW(pooled->copy_kv_block(0, 8, 1), ModelError);
  }
}

// Hidden states after the final norm (embeddings): as the CPU's, and a
// sequence's alone and beside another bit for bit.
TEST(GpuForward, HiddenStatesMatchTheCpuAndIgnoreTheBatch) {
  const fs::path path = kData / "archs/qwen2.q8_0.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto m = Model::load(path.string());
  const std::size_t E = m->config().n_embd;
  CpuForward cpu(*m, cpu_options());
  const auto gpu = make_gpu_forward(*m, gpu_options(), no_gate());
  const std::vector<int32_t> ids = prompt_for(*m, 40);
  const auto c = cpu.hidden_states(prompt_batch(ids, 0, false));
  const auto g = gpu->hidden_states(prompt_batch(ids, 0, false));
  ASSERT_EQ(g.size(), E);
  EXPECT_GE(cosine(c.data(), g.data(), E), default_parity_cosine(*m));
  const std::vector<float> alone(g.begin(), g.end());

  std::vector<TokenInput> beside = prompt_batch(prompt_for(*m, 23), 1, false);
  for (const TokenInput& t : prompt_batch(ids, 2, false)) beside.push_back(t);
  const auto both = gpu->hidden_states(beside);
  ASSERT_EQ(both.size(), 2 * E);
  EXPECT_TRUE(std::equal(alone.begin(), alone.end(), both.begin() + E));
}

// Slot 2 goes on from slot 0's first 256 positions (its first block, then
// block 9): `other` gives `one`'s logits bit for bit.
void expect_shared_prefix_equal(Forward& one, Forward& other, std::size_t V) {
  other.set_block_table(2, std::vector<uint32_t>{0, 9});
  one.set_block_table(2, std::vector<uint32_t>{0, 9});
  std::vector<TokenInput> rest;
  for (uint32_t i = 256; i < 280; ++i) rest.push_back({static_cast<int32_t>((i * 31) % V), i, 2, i % 8 == 0});
  const auto c = one.decode(rest);
  const std::vector<float> rest_one(c.begin(), c.end());
  const auto d = other.decode(rest);
  EXPECT_TRUE(std::equal(rest_one.begin(), rest_one.end(), d.begin(), d.end()));
}

// Layers split over GPUs (over two, or the one GPU named twice where there
// is one; the test models have two layers) give one GPU's bits: prompts in
// chunks beside other sequences and cut into many steps, decode steps
// replayed as graphs, a prefix in shared blocks, hidden states. Each device
// holds only its layers' weights.
TEST(GpuForward, LayerSplitGivesOneGpusBits) {
  const int n_dev = cudaexec::device_count();
  std::vector<std::vector<int>> splits = {{0, 0}};
  if (n_dev >= 2) splits.push_back({0, 1});
  if (n_dev >= 2) splits.push_back({1, 0});
  for (const char* name : {"archs/llama3.q4_k_m.gguf", "archs/deepseek2.q4_k_m.gguf", "archs/qwen3moe.q4_k_m.gguf"}) {
    const fs::path path = kData / name;
    if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
    const auto m = Model::load(path.string());
    const std::size_t V = m->config().n_vocab;
    const ForwardOptions fo{.n_ctx = 640, .n_seq = 4};
    const auto one = make_gpu_forward(*m, fo, no_gate());
    const std::vector<int32_t> ids = prompt_for(*m, 300);
    const std::vector<uint32_t> marked = {0, 100, 255, 256, 299};
    std::vector<std::vector<int32_t>> others = {prompt_for(*m, 40), prompt_for(*m, 70)};
    others[1].back() = 3;
    const std::vector<float> want = chunked_logits(*one, ids, 0, marked, 64, others, V);
    const std::vector<int32_t> want_greedy = greedy(*one, ids, 12);
    for (const std::vector<int>& devices : splits) {
      SCOPED_TRACE(std::string(name) + " over " + std::to_string(devices.size()) + " stages, first GPU " +
                   std::to_string(devices[0]));
      GpuOptions g = no_gate();
      g.split = SplitMode::Layer;
      g.devices = devices;
      // Steps of at most 64 rows: a call's prompt chunks without logits are
      // enqueued without waiting, the stages overlapping.
      ForwardOptions small_steps = fo;
      small_steps.max_batch = 64;
      const auto split = make_gpu_forward(*m, small_steps, g);
      EXPECT_NE(split->backend_name().find("layers split"), std::string::npos) << split->backend_name();
      EXPECT_TRUE(chunked_logits(*split, ids, 0, marked, 64, others, V) == want);
      EXPECT_EQ(greedy(*split, ids, 12), want_greedy);
      const auto a = one->hidden_states(prompt_batch(ids, 3, false));
      const std::vector<float> hidden_one(a.begin(), a.end());
      const auto b = split->hidden_states(prompt_batch(ids, 3, false));
      EXPECT_TRUE(std::equal(hidden_one.begin(), hidden_one.end(), b.begin(), b.end()));
      expect_shared_prefix_equal(*one, *split, V);
      EXPECT_NE(split->device_memory_report().find("GPU " + std::to_string(devices.back())), std::string::npos)
          << split->device_memory_report();
    }
    GpuOptions too_many = no_gate();
    too_many.split = SplitMode::Layer;
    too_many.devices.assign(m->config().n_layer + 1, 0);
    EXPECT_THROW((void)make_gpu_forward(*m, fo, too_many), ModelError);
  }
}

// Tensor parallelism gives the same bits on 1, 2 and 4 GPUs (as many as
// there are): prompts in chunks beside other sequences and cut into many
// steps, decode steps replayed as graphs, hidden states, a prefix in shared
// blocks. On one GPU (N = 1) it runs the same sliced sums, which stay within
// the parity gate of the unsplit executor's. The test models cover fused
// Q/K/V and gate/up (phi3), QKV biases and tied embeddings (qwen2), Q/K norms
// (qwen3), soft caps, post-norms and windows (gemma2), LayerNorm and
// position embeddings (gpt2).
TEST(GpuForward, TensorParallelGivesTheSameBitsOnEveryGpuCount) {
  const int n_dev = cudaexec::device_count();
  int found = 0;
  for (const char* name : {"archs/llama3.q8_0.gguf", "archs/phi3.q8_0.gguf", "archs/qwen2.q8_0.gguf",
                           "archs/qwen3.q8_0.gguf", "archs/gemma2.q8_0.gguf", "archs/gpt2.q8_0.gguf"}) {
    const fs::path path = kData / name;
    if (!fs::exists(path)) {
      std::cout << "no " << path << "\n";
      continue;
    }
    ++found;
    SCOPED_TRACE(name);
    const auto m = Model::load(path.string());
    const std::size_t V = m->config().n_vocab;
    const ForwardOptions fo{.n_ctx = 640, .n_seq = 4};
    GpuOptions g = no_gate();
    g.tensor_parallel = 1;
    const auto one = make_gpu_forward(*m, fo, g);
    EXPECT_NE(one->backend_name().find("tensor parallel"), std::string::npos) << one->backend_name();
    // (gpt2's test model learns 256 positions; 12 tokens are generated after the prompt.)
    const model::Matrix& learned = m->weights().position_embd;
    const uint32_t len = std::min(300u, learned ? learned.n_out - 12 : 300u);
    const std::vector<int32_t> ids = prompt_for(*m, len);
    {
      const auto plain = make_gpu_forward(*m, fo, no_gate());
      const auto a = plain->decode(prompt_batch(ids, 0, false));
      const std::vector<float> unsplit(a.begin(), a.end());
      const auto b = one->decode(prompt_batch(ids, 0, false));
      EXPECT_GE(cosine(unsplit.data(), b.data(), V), default_parity_cosine(*m));
    }
    const std::vector<uint32_t> marked = {0, 100, len - 45, len - 44, len - 1};
    std::vector<std::vector<int32_t>> others = {prompt_for(*m, 40), prompt_for(*m, 70)};
    others[1].back() = 3;
    const std::vector<float> want = chunked_logits(*one, ids, 0, marked, 64, others, V);
    const std::vector<int32_t> want_greedy = greedy(*one, ids, 12);
    const auto h = one->hidden_states(prompt_batch(ids, 3, false));
    const std::vector<float> want_hidden(h.begin(), h.end());
    // A fresh executor's first step a decode, captured as a graph before any
    // collective ran outside one.
    const std::vector<int32_t> first_token = {ids[0]};
    const std::vector<int32_t> want_first = greedy(*make_gpu_forward(*m, fo, g), first_token, 8);
    for (const uint32_t n : {2u, 4u}) {
      if (static_cast<int>(n) > n_dev || m->config().n_head_kv % n != 0) continue;
      SCOPED_TRACE(std::to_string(n) + " GPUs");
      g.tensor_parallel = n;
      EXPECT_EQ(greedy(*make_gpu_forward(*m, fo, g), first_token, 8), want_first);
      {
        // Steps of up to 512 rows (as below, of up to 64).
        const auto long_steps = make_gpu_forward(*m, fo, g);
        EXPECT_TRUE(chunked_logits(*long_steps, ids, 0, marked, 64, others, V) == want);
      }
      ForwardOptions small_steps = fo;
      small_steps.max_batch = 64;
      const auto split = make_gpu_forward(*m, small_steps, g);
      EXPECT_TRUE(chunked_logits(*split, ids, 0, marked, 64, others, V) == want);
      EXPECT_EQ(greedy(*split, ids, 12), want_greedy);
      const auto b = split->hidden_states(prompt_batch(ids, 3, false));
      EXPECT_TRUE(std::equal(want_hidden.begin(), want_hidden.end(), b.begin(), b.end()));
      if (len >= 280) {
        expect_shared_prefix_equal(*one, *split, V);
        one->set_block_table(2, std::vector<uint32_t>{6, 7, 8});  // slot 2's own run again
      }
      EXPECT_NE(split->device_memory_report().find("GPU " + std::to_string(n - 1)), std::string::npos)
          << split->device_memory_report();
    }
  }
  if (found == 0) GTEST_SKIP() << "no test models at " << kData;
}

// What tensor parallelism cannot split is refused, saying why.
TEST(GpuForward, TensorParallelRefusesWhatItCannotSplit) {
  const auto refused = [](const char* name, GpuOptions g, const std::string& why) {
    const fs::path path = kData / name;
    if (!fs::exists(path)) return;
    SCOPED_TRACE(name);
    const auto m = Model::load(path.string());
    try {
      (void)make_gpu_forward(*m, {.n_ctx = 128, .n_seq = 1}, g);
      ADD_FAILURE() << "not refused";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  GpuOptions g = no_gate();
  g.tensor_parallel = 1;
  // 64-value slices of the attention output are not whole Q4_K blocks.
  refused("archs/llama3.q4_k_m.gguf", g, "whole blocks");
  refused("archs/qwen3moe.q8_0.gguf", g, "mixtures of experts");
  refused("archs/deepseek2.q4_k_m.gguf", g, "latent attention");
  g.tensor_parallel = 2;
  g.devices = {0, 0};
  refused("archs/llama3.q8_0.gguf", g, "distinct GPUs");
  g.devices = {0};
  refused("archs/llama3.q8_0.gguf", g, "names 1 devices");
}

}  // namespace
}  // namespace lamina::model
