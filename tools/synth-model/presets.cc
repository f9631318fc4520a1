#include "presets.h"

#include <array>

namespace lamina::synth {
namespace {

constexpr std::string_view kQwen2Specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

constexpr TokenizerStyle kQwen2Tokenizer = {
    .pre = "qwen2",
    .specials = kQwen2Specials,
    .filler_prefix = "extra_",
    .n_special = 293,  // ids 151643..151935 in the real vocabulary
    .bos = "<|endoftext|>",
    .eos = "<|im_end|>",
    .padding = "<|endoftext|>",
    .add_bos = false,
    .chat_template =
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt "
        "%}{{ '<|im_start|>assistant\\n' }}{% endif %}",
};

constexpr std::string_view kLlama3Specials[] = {
    "<|begin_of_text|>",  "<|end_of_text|>",          "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
    "<|start_header_id|>", "<|end_header_id|>",        "<|eom_id|>",
    "<|eot_id|>",
};

constexpr TokenizerStyle kLlama3Tokenizer = {
    .pre = "llama-bpe",
    .specials = kLlama3Specials,
    .filler_prefix = "reserved_special_token_",
    .filler_first = 3,  // 0..2 are among the named ones
    .n_special = 256,  // ids 128000..128255
    .bos = "<|begin_of_text|>",
    .eos = "<|eot_id|>",
    .padding = "",
    .add_bos = true,
    .chat_template =
        "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] "
        "+ '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' "
        "}}{% endif %}",
};

constexpr TokenizerStyle kTinyTokenizer = {
    .pre = "qwen2",
    .specials = kQwen2Specials,
    .filler_prefix = "extra_",
    .n_special = 8,
    .bos = "<|endoftext|>",
    .eos = "<|im_end|>",
    .padding = "<|endoftext|>",
    .add_bos = false,
    .chat_template = kQwen2Tokenizer.chat_template,
};

constexpr std::string_view kDeepseekSpecials[] = {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"};

constexpr TokenizerStyle kDeepseekTokenizer = {
    .pre = "deepseek-llm",
    .specials = kDeepseekSpecials,
    .filler_prefix = "reserved_",
    .n_special = 2400,  // ids 100000..102399
    .bos = "<｜begin▁of▁sentence｜>",
    .eos = "<｜end▁of▁sentence｜>",
    .padding = "<｜end▁of▁sentence｜>",
    .add_bos = true,
    .chat_template = kLlama3Tokenizer.chat_template,
};

// DeepSeek-V2-Lite's config.json: kv_lora_rank 512, q_lora_rank null,
// qk_nope/rope/v 128/64/128, 2 shared experts of 1408, first_k_dense_replace
// 1 with intermediate_size 10944, routed_scaling_factor 1.0, YaRN factor 40
// over 4096 positions with mscale_all_dim 0.707.
constexpr LatentShape kDeepseekV2Lite = {0, 512, 128, 64, 128, 2, 1, 10944, 1.0f, 40.0f, 4096, 0.0707f};
// The same features at the tiny size.
constexpr LatentShape kTinyDeepseek = {0, 128, 64, 32, 64, 1, 1, 512, 2.0f, 40.0f, 128, 0.0707f};

constexpr std::array kPresets = {
    // Rows of 256 values in every matrix, so the K-quants need no fallback.
    ModelPreset{"tiny", "qwen2", 2, 256, 4, 2, 512, 1024, 2048, 1e6f, 1e-6f, true, true,
                &kTinyTokenizer},
    ModelPreset{"tiny-llama", "llama", 2, 256, 4, 2, 768, 1024, 2048, 5e5f, 1e-5f, false, false,
                &kTinyTokenizer},
    // The later architectures' features in the tiny shape.
    ModelPreset{"tiny-mixtral", "llama", 2, 256, 4, 2, 256, 1024, 2048, 1e6f, 1e-5f, false, false,
                &kTinyTokenizer, 4, 2},
    ModelPreset{"tiny-gemma3", "gemma3", 3, 256, 4, 1, 512, 1024, 2048, 1e6f, 1e-6f, false, true,
                &kTinyTokenizer, 0, 0, 64, 16, 3, 1e4f},
    ModelPreset{"tiny-gpt-oss", "gpt-oss", 2, 256, 4, 1, 128, 1024, 4096, 1.5e5f, 1e-5f, true, false,
                &kTinyTokenizer, 4, 2, 64, 8},
    ModelPreset{"tiny-deepseek2", "deepseek2", 2, 256, 4, 1, 256, 1024, 2048, 1e4f, 1e-6f, false, false,
                &kTinyTokenizer, 4, 2, 0, 0, 0, 0.0f, &kTinyDeepseek},
    ModelPreset{"qwen2-0.5b", "qwen2", 24, 896, 14, 2, 4864, 151936, 32768, 1e6f, 1e-6f, true,
                true, &kQwen2Tokenizer},
    ModelPreset{"qwen2-1.5b", "qwen2", 28, 1536, 12, 2, 8960, 151936, 32768, 1e6f, 1e-6f, true,
                true, &kQwen2Tokenizer},
    ModelPreset{"llama3-8b", "llama", 32, 4096, 32, 8, 14336, 128256, 8192, 5e5f, 1e-5f, false,
                false, &kLlama3Tokenizer},
    // Llama 3 70B's shape: in Q8_0 (~75 GB) more than one 80 GB GPU holds
    // beside its cache, for splitting over GPUs.
    ModelPreset{"llama3-70b", "llama", 80, 8192, 64, 8, 28672, 128256, 8192, 5e5f, 1e-5f, false,
                false, &kLlama3Tokenizer},
    // Mixtral 8x7B's shape (47B parameters); the -2l variant keeps 2 of its
    // 32 layers, to measure a layer's cost where the whole model does not fit.
    ModelPreset{"mixtral-8x7b", "llama", 32, 4096, 32, 8, 14336, 32000, 32768, 1e6f, 1e-5f, false,
                false, &kLlama3Tokenizer, 8, 2},
    ModelPreset{"mixtral-8x7b-2l", "llama", 2, 4096, 32, 8, 14336, 32000, 32768, 1e6f, 1e-5f, false,
                false, &kLlama3Tokenizer, 8, 2},
    // Gemma 3 4B (text): head_dim 256, window 1024, one global layer in 6.
    ModelPreset{"gemma3-4b", "gemma3", 34, 2560, 8, 4, 10240, 262144, 131072, 1e6f, 1e-6f, false,
                true, &kLlama3Tokenizer, 0, 0, 256, 1024, 6, 1e4f},
    // gpt-oss-20b: 24 layers of 2880, 64 query heads of 64 over 8 KV heads,
    // 32 experts of width 2880 (4 used), window 128 on even layers; its
    // o200k vocabulary size with a byte-level BPE of our own; -2l keeps 2 of
    // its 24 layers.
    ModelPreset{"gpt-oss-20b", "gpt-oss", 24, 2880, 64, 8, 2880, 201088, 131072, 1.5e5f, 1e-5f, true,
                false, &kLlama3Tokenizer, 32, 4, 64, 128},
    // DeepSeek-V2-Lite (15.7B parameters, 2.4B active): 27 layers, the first
    // dense, then 64 routed experts of 1408 (6 used) and 2 shared.
    ModelPreset{"deepseek-v2-lite", "deepseek2", 27, 2048, 16, 1, 1408, 102400, 163840, 1e4f, 1e-6f, false,
                false, &kDeepseekTokenizer, 64, 6, 0, 0, 0, 0.0f, &kDeepseekV2Lite},
    // Its first 2 layers (the dense one and one with experts), to measure a layer's cost
    // where writing the whole model takes longer than a session has.
    ModelPreset{"deepseek-v2-lite-2l", "deepseek2", 2, 2048, 16, 1, 1408, 102400, 163840, 1e4f, 1e-6f, false,
                false, &kDeepseekTokenizer, 64, 6, 0, 0, 0, 0.0f, &kDeepseekV2Lite},
    ModelPreset{"gpt-oss-20b-2l", "gpt-oss", 2, 2880, 64, 8, 2880, 201088, 131072, 1.5e5f, 1e-5f, true,
                false, &kLlama3Tokenizer, 32, 4, 64, 128},
};

}  // namespace

std::span<const ModelPreset> all_presets() { return kPresets; }

const ModelPreset* find_preset(std::string_view name) {
  for (const ModelPreset& p : kPresets) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace lamina::synth
