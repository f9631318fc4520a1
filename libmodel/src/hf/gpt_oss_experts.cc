#include "hf/gpt_oss_experts.h"

#include <cstring>
#include <string>

#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

constexpr std::string_view kPartNames[] = {"gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"};

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

std::vector<gguf::TensorInfo> gpt_oss_expert_tensors(const std::string& blk, const CheckpointTensor* const parts[4],
                                                     uint32_t n_expert, uint32_t n_embd, OwnedBuffers& owned) {
  for (std::size_t i = 0; i < std::size(kPartNames); ++i) {
    if (!parts[i])
      throw ModelError("checkpoint: the experts of layer " + blk.substr(4, blk.size() - 5) + " have no '" +
                       std::string(kPartNames[i]) + "'");
  }
  const CheckpointTensor& gate_up = *parts[0];
  const CheckpointTensor& gate_up_bias = *parts[1];
  const CheckpointTensor& down = *parts[2];
  const CheckpointTensor& down_bias = *parts[3];
  const uint64_t E = n_expert, H = n_embd;
  if (gate_up.tensor.shape.size() != 3 || gate_up.tensor.shape[2] % 2 != 0 || gate_up.tensor.shape[2] == 0)
    throw ModelError(gate_up.file + ": tensor '" + gate_up.tensor.name +
                     "' is not [num_local_experts, hidden_size, 2 * expert width]");
  const uint64_t F = gate_up.tensor.shape[2] / 2;
  Builder b(blk, n_expert, n_embd, owned);
  b.require_shape(gate_up, {E, H, 2 * F});
  b.require_shape(gate_up_bias, {E, 2 * F});
  b.require_shape(down, {E, F, H});
  b.require_shape(down_bias, {E, H});
  std::vector<gguf::TensorInfo> out;
  for (uint64_t half : {0, 1}) {
    const char* name = half == 0 ? "ffn_gate_exps." : "ffn_up_exps.";
    out.push_back(b.matrices(std::string(name) + "weight", gate_up, F, H,
                             [&](uint64_t e, uint64_t o, uint64_t i) { return (e * H + i) * 2 * F + 2 * o + half; }));
    out.push_back(b.biases(std::string(name) + "bias", gate_up_bias, F,
                           [&](uint64_t e, uint64_t o) { return e * 2 * F + 2 * o + half; }));
  }
  out.push_back(b.matrices("ffn_down_exps.weight", down, H, F,
                           [&](uint64_t e, uint64_t o, uint64_t i) { return (e * F + i) * H + o; }));
  out.push_back(b.biases("ffn_down_exps.bias", down_bias, H, [&](uint64_t e, uint64_t o) { return e * H + o; }));
  return out;
}

}  // namespace lamina::model::hf
