// Attention throughput of a prompt chunk on the GPU: 512 new rows of one
// sequence after `past` cached positions, for the head shapes of the models
// the side-by-side uses, launched per span (records and a combine pass) and
// per tile (spans folded in the block), and what the executor picks.
#include <cmath>
#include <cstdio>

#include "lamina/cudaexec/device.h"
#include "lamina/cudaexec/kernel_check.h"

namespace {

using lamina::cudaexec::AttentionCheck;
using lamina::cudaexec::AttentionSplit;

struct Model {
  const char* name;
  uint32_t n_head, n_head_kv, head_dim;
};
constexpr Model kModels[] = {{"llama3-8b", 32, 8, 128}, {"qwen2-1.5b", 12, 2, 128}, {"qwen2-0.5b", 14, 2, 64}};
constexpr uint32_t kPast[] = {0, 512, 1024, 1536, 3584};
constexpr uint32_t kRows = 512;

// Multiply-adds of the causal scores and weighted values, as FLOPs.
double useful_flops(const AttentionCheck& c) {
  double keys = 0.0;
  for (uint32_t r = 0; r < c.n_rows; ++r) keys += c.past + r + 1;
  return 4.0 * c.n_head * c.head_dim * keys;
}

}  // namespace

int main() {
  if (lamina::cudaexec::device_count() == 0) {
    std::fprintf(stderr, "attention_bench: no CUDA device\n");
    return 1;
  }
  const auto info = lamina::cudaexec::device_info(0);
  std::printf("%s, %d SMs; %u new rows, microseconds (TFLOP/s of the causal products)\n\n", info.name.c_str(),
              info.sm_count, kRows);
  std::printf("| model | past | per span | per tile | picked |\n|---|---:|---:|---:|---:|\n");
  for (const Model& m : kModels) {
    for (uint32_t past : kPast) {
      AttentionCheck c;
      c.n_head = m.n_head;
      c.n_head_kv = m.n_head_kv;
      c.head_dim = m.head_dim;
      c.scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
      c.past = past;
      c.n_rows = kRows;
      std::printf("| %s | %u |", m.name, past);
      for (AttentionSplit split : {AttentionSplit::PerSpan, AttentionSplit::PerTile, AttentionSplit::Auto}) {
        const double us = lamina::cudaexec::time_attention_us(c, split, 50);
        if (us < 0) {
          std::printf(" - |");
        } else {
          std::printf(" %.1f (%.0f) |", us, useful_flops(c) / us * 1e-6);
        }
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
