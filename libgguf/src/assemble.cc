// GgufFile::assemble: a file built in memory, checked as strictly as a parsed one.
#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "lamina/gguf/file.h"
#include "mapping.h"
#include "utf8.h"

namespace lamina::gguf {
namespace {

constexpr uint64_t kMaxKeyBytes = 65535;

void check_key(const std::string& key) {
  if (key.empty()) throw GgufError("empty metadata key");
  if (key.size() > kMaxKeyBytes)
    throw GgufError("metadata key longer than " + std::to_string(kMaxKeyBytes) + " bytes");
  if (!is_valid_utf8(key)) throw GgufError("metadata key is not valid UTF-8");
}

uint32_t alignment_of(const std::vector<KeyValue>& metadata) {
  for (const auto& kv : metadata) {
    if (kv.key != "general.alignment") continue;
    if (kv.value.type() != ValueType::UInt32)
      throw GgufError("general.alignment must be uint32, found " + std::string(value_type_name(kv.value.type())));
    const uint32_t a = kv.value.as<uint32_t>();
    if (a == 0 || !std::has_single_bit(a))
      throw GgufError("general.alignment " + std::to_string(a) + " is not a power of two");
    return a;
  }
  return kDefaultAlignment;
}

// Fills the derived fields of `t` and checks them against its view.
void complete_tensor(TensorInfo& t) {
  const std::string who = "tensor '" + t.name + "'";
  if (t.name.empty()) throw GgufError("empty tensor name");
  if (!is_valid_utf8(t.name)) throw GgufError(who + ": name is not valid UTF-8");
  if (t.n_dims == 0 || t.n_dims > kMaxDims)
    throw GgufError(who + ": n_dims " + std::to_string(t.n_dims) + " is not in 1.." + std::to_string(kMaxDims));
  for (uint32_t d = 0; d < kMaxDims; ++d) {
    if (d >= t.n_dims) {
      if (t.ne[d] != 1) throw GgufError(who + ": dimension " + std::to_string(d) + " past n_dims is not 1");
      continue;
    }
    if (t.ne[d] == 0) throw GgufError(who + ": dimension " + std::to_string(d) + " is zero");
    if (t.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw GgufError(who + ": dimension " + std::to_string(d) + " is too large");
  }
  if (!tensor_type_traits(t.type))
    throw GgufError(who + ": unknown tensor type id " + std::to_string(static_cast<uint32_t>(t.type)));
  try {
    t.n_bytes = tensor_byte_size(t.type, t.shape());
  } catch (const GgufError& e) {
    throw GgufError(who + ": " + e.what());
  }
  t.n_elements = 1;
  for (uint32_t d = 0; d < t.n_dims; ++d) t.n_elements *= t.ne[d];
  if (t.data.size() != t.n_bytes || t.data.data() == nullptr)
    throw GgufError(who + ": its data holds " + std::to_string(t.data.size()) + " bytes, the " +
                    std::string(tensor_type_name(t.type)) + " shape needs " + std::to_string(t.n_bytes));
}

void reject_duplicates(const std::vector<std::pair<std::string_view, std::size_t>>& sorted_index, const char* what) {
  for (std::size_t i = 1; i < sorted_index.size(); ++i) {
    if (sorted_index[i].first == sorted_index[i - 1].first)
      throw GgufError(std::string("duplicate ") + what + " '" + std::string(sorted_index[i].first) + "'");
  }
}

}  // namespace

GgufFile GgufFile::assemble(std::vector<KeyValue> metadata, std::vector<TensorInfo> tensors,
                            std::shared_ptr<const void> keep_alive) {
  GgufFile f;
  f.version_ = 3;
  f.keep_alive_ = std::move(keep_alive);
  for (auto& kv : metadata) {
    check_key(kv.key);
    kv.offset = 0;
  }
  f.alignment_ = alignment_of(metadata);
  f.metadata_ = std::move(metadata);

  uint64_t next_offset = 0;
  for (auto& t : tensors) {
    complete_tensor(t);
    t.info_offset = 0;
    t.offset = next_offset;
    const uint64_t a = f.alignment_;
    if (t.n_bytes > std::numeric_limits<uint64_t>::max() - next_offset - a)
      throw GgufError("tensor '" + t.name + "': the tensors together are too large");
    next_offset += (t.n_bytes + a - 1) / a * a;
  }
  f.tensors_ = std::move(tensors);

  for (std::size_t i = 0; i < f.metadata_.size(); ++i) f.key_index_.emplace_back(f.metadata_[i].key, i);
  std::sort(f.key_index_.begin(), f.key_index_.end());
  reject_duplicates(f.key_index_, "metadata key");
  for (std::size_t i = 0; i < f.tensors_.size(); ++i) f.tensor_index_.emplace_back(f.tensors_[i].name, i);
  std::sort(f.tensor_index_.begin(), f.tensor_index_.end());
  reject_duplicates(f.tensor_index_, "tensor name");
  return f;
}

}  // namespace lamina::gguf
