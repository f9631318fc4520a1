#include "hf/gpt_oss_experts.h"

#include <cstring>
#include <string>

#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

using Part = GptOssExpertPart;
constexpr std::string_view kPartNames[kGptOssExpertParts] = {
    "gate_up_proj",        "gate_up_proj_bias",   "down_proj",        "down_proj_bias",
    "gate_up_proj_blocks", "gate_up_proj_scales", "down_proj_blocks", "down_proj_scales"};
constexpr uint64_t kBlock = 32;  // MXFP4 values per block

class Builder {
 public:
  Builder(const std::string& blk, uint32_t n_expert, uint32_t n_embd, OwnedBuffers& owned)
      : blk_(blk), n_expert_(n_expert), n_embd_(n_embd), owned_(owned) {}

  void require_shape(const CheckpointTensor& ct, const std::vector<uint64_t>& want) const {
    if (ct.tensor.shape == want) return;
    std::string text;
    for (uint64_t d : want) text += (text.empty() ? "" : ", ") + std::to_string(d);
    throw ModelError(ct.file + ": tensor '" + ct.tensor.name + "' does not have the shape [" + text +
                     "] (num_local_experts, hidden_size and the expert width)");
  }

  // out[e][o][i] = src at element index(e, o, i), kept in the source dtype.
  template <class Index>
  gguf::TensorInfo matrices(const std::string& name, const CheckpointTensor& ct, uint64_t rows, uint64_t cols,
                            Index index) {
    const std::size_t esize = dtype_size(ct.tensor.dtype);
    const std::size_t bytes = std::size_t{n_expert_} * rows * cols * esize;
    std::byte* out = allocate(bytes);
    const std::byte* src = ct.tensor.data.data();
    for (uint64_t e = 0; e < n_expert_; ++e)
      for (uint64_t o = 0; o < rows; ++o)
        for (uint64_t i = 0; i < cols; ++i)
          std::memcpy(out + ((e * rows + o) * cols + i) * esize, src + index(e, o, i) * esize, esize);
    gguf::TensorInfo t;
    t.name = blk_ + name;
    t.n_dims = 3;
    t.ne = {cols, rows, n_expert_, 1};
    t.type = gguf_type(ct.tensor.dtype);
    t.data = {out, bytes};
    return t;
  }

  void require_dtype(const CheckpointTensor& ct, bool u8) const {
    if ((ct.tensor.dtype == Dtype::U8) == u8) return;
    throw ModelError(ct.file + ": tensor '" + ct.tensor.name + "' has dtype " + std::string(dtype_name(ct.tensor.dtype)) +
                     (u8 ? ", not the U8 of MXFP4 blocks and scales" : "; only F32, F16 and BF16 are read here"));
  }

  // An MXFP4 stack of `rows` rows of n_blocks blocks per expert; row (e, o)
  // is the checkpoint's row src_row(e, o) of [E * all rows].
  template <class SourceRow>
  gguf::TensorInfo mxfp4_matrices(const std::string& name, const CheckpointTensor& blocks,
                                  const CheckpointTensor& scales, uint64_t rows, uint64_t n_blocks,
                                  SourceRow src_row) {
    constexpr std::size_t kBlockBytes = 1 + kBlock / 2;
    const std::size_t bytes = std::size_t{n_expert_} * rows * n_blocks * kBlockBytes;
    std::byte* out = allocate(bytes);
    const auto* codes = reinterpret_cast<const uint8_t*>(blocks.tensor.data.data());
    const auto* exps = reinterpret_cast<const uint8_t*>(scales.tensor.data.data());
    auto* dst = reinterpret_cast<uint8_t*>(out);
    for (uint64_t e = 0; e < n_expert_; ++e) {
      for (uint64_t o = 0; o < rows; ++o) {
        const uint64_t from = src_row(e, o);
        for (uint64_t k = 0; k < n_blocks; ++k, dst += kBlockBytes) {
          const uint8_t* pairs = codes + (from * n_blocks + k) * (kBlock / 2);
          uint8_t c[kBlock];
          for (uint64_t j = 0; j < kBlock / 2; ++j) c[2 * j] = pairs[j] & 0xF, c[2 * j + 1] = pairs[j] >> 4;
          dst[0] = exps[from * n_blocks + k];
          for (uint64_t j = 0; j < kBlock / 2; ++j) dst[1 + j] = static_cast<uint8_t>(c[j] | (c[j + kBlock / 2] << 4));
        }
      }
    }
    gguf::TensorInfo t;
    t.name = blk_ + name;
    t.n_dims = 3;
    t.ne = {n_blocks * kBlock, rows, n_expert_, 1};
    t.type = gguf::TensorType::MXFP4;
    t.data = {out, bytes};
    return t;
  }

  // out[e][o] = src element index(e, o), as F32.
  template <class Index>
  gguf::TensorInfo biases(const std::string& name, const CheckpointTensor& ct, uint64_t n, Index index) {
    const std::size_t esize = dtype_size(ct.tensor.dtype);
    auto* out = reinterpret_cast<float*>(allocate(std::size_t{n_expert_} * n * sizeof(float)));
    for (uint64_t e = 0; e < n_expert_; ++e)
      for (uint64_t o = 0; o < n; ++o)
        out[e * n + o] = element_as_f32(ct.tensor.dtype, ct.tensor.data.data() + index(e, o) * esize);
    gguf::TensorInfo t;
    t.name = blk_ + name;
    t.n_dims = 2;
    t.ne = {n, n_expert_, 1, 1};
    t.type = gguf::TensorType::F32;
    t.data = {reinterpret_cast<const std::byte*>(out), std::size_t{n_expert_} * n * sizeof(float)};
    return t;
  }

 private:
  std::byte* allocate(std::size_t n) {
    owned_.push_back(std::make_unique<std::byte[]>(n));
    return owned_.back().get();
  }

  const std::string& blk_;
  uint64_t n_expert_, n_embd_;
  OwnedBuffers& owned_;
};

}  // namespace

std::optional<GptOssExpertPart> gpt_oss_expert_part(std::string_view rest) {
  for (std::size_t i = 0; i < std::size(kPartNames); ++i) {
    if (rest == kPartNames[i]) return static_cast<GptOssExpertPart>(i);
  }
  return std::nullopt;
}

std::vector<gguf::TensorInfo> gpt_oss_expert_tensors(const std::string& blk, const CheckpointTensor* const* parts,
                                                     uint32_t n_expert, uint32_t n_embd, OwnedBuffers& owned) {
  const auto has = [&](Part p) { return parts[static_cast<std::size_t>(p)] != nullptr; };
  const bool mxfp4 = has(Part::GateUpBlocks) || has(Part::GateUpScales) || has(Part::DownBlocks) || has(Part::DownScales);
  const std::string layer = blk.substr(4, blk.size() - 5);
  const auto get = [&](Part p) -> const CheckpointTensor& {
    if (!has(p))
      throw ModelError("checkpoint: the experts of layer " + layer + " have no '" +
                       std::string(kPartNames[static_cast<std::size_t>(p)]) + "'");
    return *parts[static_cast<std::size_t>(p)];
  };
  if (mxfp4 && (has(Part::GateUp) || has(Part::Down)))
    throw ModelError("checkpoint: the experts of layer " + layer + " are stored both in MXFP4 and unquantized");
  const CheckpointTensor& gate_up_bias = get(Part::GateUpBias);
  const CheckpointTensor& down_bias = get(Part::DownBias);
  const uint64_t E = n_expert, H = n_embd;
  const CheckpointTensor& first = get(mxfp4 ? Part::GateUpBlocks : Part::GateUp);
  const auto& first_shape = first.tensor.shape;
  const std::size_t width_dim = mxfp4 ? 1 : 2;
  if (first_shape.size() <= width_dim || first_shape[width_dim] % 2 != 0 || first_shape[width_dim] == 0)
    throw ModelError(first.file + ": tensor '" + first.tensor.name + "' does not hold num_local_experts gate/up pairs");
  const uint64_t F = first_shape[width_dim] / 2;
  Builder b(blk, n_expert, n_embd, owned);
  b.require_shape(gate_up_bias, {E, 2 * F});
  b.require_shape(down_bias, {E, H});
  b.require_dtype(gate_up_bias, false);
  b.require_dtype(down_bias, false);
  std::vector<gguf::TensorInfo> out;
  if (mxfp4) {
    if (H % kBlock != 0 || F % kBlock != 0)
      throw ModelError(first.file + ": tensor '" + first.tensor.name + "': hidden_size " + std::to_string(H) +
                       " and the expert width " + std::to_string(F) + " must be multiples of 32 for MXFP4");
    const CheckpointTensor& gu_blocks = first;
    const CheckpointTensor& gu_scales = get(Part::GateUpScales);
    const CheckpointTensor& d_blocks = get(Part::DownBlocks);
    const CheckpointTensor& d_scales = get(Part::DownScales);
    for (const CheckpointTensor* ct : {&gu_blocks, &gu_scales, &d_blocks, &d_scales}) b.require_dtype(*ct, true);
    b.require_shape(gu_blocks, {E, 2 * F, H / kBlock, kBlock / 2});
    b.require_shape(gu_scales, {E, 2 * F, H / kBlock});
    b.require_shape(d_blocks, {E, H, F / kBlock, kBlock / 2});
    b.require_shape(d_scales, {E, H, F / kBlock});
    for (uint64_t half : {0, 1}) {
      const std::string name = half == 0 ? "ffn_gate_exps." : "ffn_up_exps.";
      out.push_back(b.mxfp4_matrices(name + "weight", gu_blocks, gu_scales, F, H / kBlock,
                                     [&](uint64_t e, uint64_t o) { return e * 2 * F + 2 * o + half; }));
      out.push_back(b.biases(name + "bias", gate_up_bias, F, [&](uint64_t e, uint64_t o) { return e * 2 * F + 2 * o + half; }));
    }
    out.push_back(b.mxfp4_matrices("ffn_down_exps.weight", d_blocks, d_scales, H, F / kBlock,
                                   [&](uint64_t e, uint64_t o) { return e * H + o; }));
  } else {
    const CheckpointTensor& gate_up = first;
    const CheckpointTensor& down = get(Part::Down);
    b.require_dtype(gate_up, false);
    b.require_dtype(down, false);
    b.require_shape(gate_up, {E, H, 2 * F});
    b.require_shape(down, {E, F, H});
    for (uint64_t half : {0, 1}) {
      const std::string name = half == 0 ? "ffn_gate_exps." : "ffn_up_exps.";
      out.push_back(b.matrices(name + "weight", gate_up, F, H,
                               [&](uint64_t e, uint64_t o, uint64_t i) { return (e * H + i) * 2 * F + 2 * o + half; }));
      out.push_back(b.biases(name + "bias", gate_up_bias, F, [&](uint64_t e, uint64_t o) { return e * 2 * F + 2 * o + half; }));
    }
    out.push_back(b.matrices("ffn_down_exps.weight", down, H, F,
                             [&](uint64_t e, uint64_t o, uint64_t i) { return (e * F + i) * H + o; }));
  }
  out.push_back(b.biases("ffn_down_exps.bias", down_bias, H, [&](uint64_t e, uint64_t o) { return e * H + o; }));
  return out;
}

}  // namespace lamina::model::hf
