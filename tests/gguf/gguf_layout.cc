#include "gguf_layout.h"

#include <stdexcept>

namespace lamina::gguf::testing {
namespace {

class Walker {
 public:
  explicit Walker(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  void seek(uint64_t pos) { pos_ = pos; }

  template <typename T>
  T take() {
    if (pos_ + sizeof(T) > bytes_.size()) throw std::out_of_range("layout walker: past the end");
    const T v = peek<T>(bytes_, pos_);
    pos_ += sizeof(T);
    return v;
  }

  std::string take_string() {
    const auto n = take<uint64_t>();
    if (n > bytes_.size() - pos_) throw std::out_of_range("layout walker: string past the end");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  // Skips one value of GGUF value type `type`.
  void skip_value(uint32_t type) {
    switch (type) {
      case 0:  // u8
      case 1:  // i8
      case 7:  // bool
        pos_ += 1;
        return;
      case 2:  // u16
      case 3:  // i16
        pos_ += 2;
        return;
      case 4:  // u32
      case 5:  // i32
      case 6:  // f32
        pos_ += 4;
        return;
      case 10:  // u64
      case 11:  // i64
      case 12:  // f64
        pos_ += 8;
        return;
      case 8:
        take_string();
        return;
      case 9: {
        const auto element = take<uint32_t>();
        const auto count = take<uint64_t>();
        for (uint64_t i = 0; i < count; ++i) skip_value(element);
        return;
      }
      default:
        throw std::out_of_range("layout walker: unknown value type");
    }
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
};

}  // namespace

const KvLayout& FileLayout::kv(std::string_view key) const {
  for (const auto& kv : kvs) {
    if (kv.key == key) return kv;
  }
  throw std::out_of_range("no metadata key " + std::string(key));
}

const TensorLayout& FileLayout::tensor(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return t;
  }
  throw std::out_of_range("no tensor " + std::string(name));
}

FileLayout walk_layout(std::span<const std::byte> bytes) {
  FileLayout layout;
  Walker w(bytes);
  w.seek(FileLayout::kTensorCountPos);
  const auto n_tensors = w.take<uint64_t>();
  const auto n_kv = w.take<uint64_t>();

  for (uint64_t i = 0; i < n_kv; ++i) {
    KvLayout kv;
    kv.start = w.pos();
    kv.key = w.take_string();
    kv.type_pos = w.pos();
    kv.type = w.take<uint32_t>();
    kv.value_pos = w.pos();
    if (kv.type == 9) {
      kv.element_type = w.take<uint32_t>();
      kv.count_pos = w.pos();
      kv.count = w.take<uint64_t>();
      w.seek(kv.value_pos);
    }
    w.skip_value(kv.type);
    kv.end = w.pos();
    if (kv.key == "general.alignment" && kv.type == 4)
      layout.alignment = peek<uint32_t>(bytes, kv.value_pos);
    layout.kvs.push_back(std::move(kv));
  }

  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorLayout t;
    t.start = w.pos();
    t.name = w.take_string();
    t.n_dims_pos = w.pos();
    const auto n_dims = w.take<uint32_t>();
    for (uint32_t d = 0; d < n_dims; ++d) {
      t.dim_pos.push_back(w.pos());
      t.ne.push_back(w.take<uint64_t>());
    }
    t.type_pos = w.pos();
    t.type = w.take<uint32_t>();
    t.offset_pos = w.pos();
    t.offset = w.take<uint64_t>();
    t.end = w.pos();
    layout.tensors.push_back(std::move(t));
  }

  layout.infos_end = w.pos();
  const uint64_t a = layout.alignment;
  layout.data_offset = (layout.infos_end + a - 1) / a * a;
  return layout;
}

}  // namespace lamina::gguf::testing
