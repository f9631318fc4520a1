// The apps' shared flags: parsed once, mapped onto the library's options once,
// and the library's option names put back as flags in its messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "run_flags.h"

namespace lamina::apps {
namespace {

void parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
}

TEST(RunFlags, MapOntoTheLibraryOptions) {
  CLI::App app;
  RunFlags flags;
  add_run_flags(app, flags);
  parse(app, {"-c", "128", "-t", "3", "-b", "64", "--kv-type", "f32", "--device", "auto", "--gpu", "2",
              "--no-parity-check", "--no-pack", "--pack-at-load", "--parity-min-cosine", "0.5", "--no-cuda-graphs"});
  const model::ForwardOptions fo = forward_options(flags, 4);
  EXPECT_EQ(fo.n_ctx, 128u);
  EXPECT_EQ(fo.n_threads, 3);
  EXPECT_EQ(fo.max_batch, 64u);
  EXPECT_EQ(fo.n_seq, 4u);
  EXPECT_EQ(fo.kv_type, model::KvType::F32);
  EXPECT_FALSE(fo.pack_weights);
  EXPECT_FALSE(fo.pack_in_background);
  const model::GpuOptions gpu = gpu_options(flags);
  EXPECT_EQ(gpu.device, 2);
  EXPECT_FALSE(gpu.parity_check);
  EXPECT_EQ(gpu.parity_min_cosine, 0.5);
  EXPECT_FALSE(gpu.use_graphs);
  EXPECT_EQ(device(flags), model::Device::Auto);
}

TEST(RunFlags, EveryKvTypeMaps) {
  for (const auto& [name, type] : {std::pair{"f32", model::KvType::F32}, std::pair{"f16", model::KvType::F16},
                                   std::pair{"q8_0", model::KvType::Q8_0}}) {
    CLI::App app;
    RunFlags flags;
    add_run_flags(app, flags);
    parse(app, {"--kv-type", name});
    EXPECT_EQ(forward_options(flags).kv_type, type) << name;
  }
}

TEST(RunFlags, DefaultsAreTheLibrarysOwn) {
  CLI::App app;
  RunFlags flags;
  add_run_flags(app, flags);
  parse(app, {});
  const model::ForwardOptions fo = forward_options(flags);
  const model::ForwardOptions library;
  EXPECT_EQ(fo.n_ctx, library.n_ctx);
  EXPECT_EQ(fo.kv_type, library.kv_type);
  EXPECT_EQ(fo.pack_weights, library.pack_weights);
  EXPECT_EQ(fo.pack_in_background, library.pack_in_background);
  EXPECT_EQ(fo.n_threads, library.n_threads);
  const model::GpuOptions gpu = gpu_options(flags);
  const model::GpuOptions gpu_library;
  EXPECT_EQ(gpu.parity_check, gpu_library.parity_check);
  EXPECT_EQ(gpu.use_graphs, gpu_library.use_graphs);
  EXPECT_EQ(gpu.parity_min_cosine, gpu_library.parity_min_cosine);
  EXPECT_EQ(device(flags), model::Device::Cpu);
}

TEST(RunFlags, BadValuesAndLeftOutFlagsAreParseErrors) {
  CLI::App app;
  RunFlags flags;
  add_run_flags(app, flags, kAllRunFlags & ~kCtxSizeFlag);
  EXPECT_THROW(parse(app, {"--kv-type", "q4"}), CLI::ParseError);
  CLI::App again;
  add_run_flags(again, flags, kAllRunFlags & ~kCtxSizeFlag);
  EXPECT_THROW(parse(again, {"-c", "64"}), CLI::ParseError);
}

TEST(RunFlags, SamplingFlagsOfAServerAreDefaultsInTheApisRange) {
  CLI::App app;
  model::SamplerOptions s;
  add_sampling_flags(app, s, /*server_defaults=*/true);
  parse(app, {"--temp", "0.7", "--top-k", "40"});
  EXPECT_FLOAT_EQ(s.temperature, 0.7f);
  EXPECT_EQ(s.top_k, 40);
  CLI::App hot;
  add_sampling_flags(hot, s, true);
  EXPECT_THROW(parse(hot, {"--temp", "3"}), CLI::ParseError);
  CLI::App no_seed;
  add_sampling_flags(no_seed, s, true);
  EXPECT_THROW(parse(no_seed, {"--seed", "1"}), CLI::ParseError);
}

TEST(FlagMessage, PutsTheFlagsBackForTheOptionFields) {
  EXPECT_EQ(flag_message("the prompt has 7 tokens; the context holds 4 (ForwardOptions::n_ctx)"),
            "the prompt has 7 tokens; the context holds 4 (--ctx-size)");
  EXPECT_EQ(flag_message("LoadOptions::quantize: q4_0 cannot hold weights"), "--quantize: q4_0 cannot hold weights");
  EXPECT_EQ(flag_message("parity failed; GpuOptions::parity_check = false skips this check"),
            "parity failed; --no-parity-check skips this check");
  EXPECT_EQ(flag_message("nothing to translate"), "nothing to translate");
}

}  // namespace
}  // namespace lamina::apps
