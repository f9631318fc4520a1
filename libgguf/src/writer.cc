#include "lamina/gguf/writer.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lamina::gguf {
namespace {

constexpr uint32_t kVersion = 3;

class ByteSink {
 public:
  explicit ByteSink(std::ostream& out) : out_(out) {}

  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    bytes(buf, sizeof(T));
  }
  void bytes(const void* p, std::size_t n) {
    out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    pos_ += n;
  }
  void string(std::string_view s) {
    put<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    static const char zeros[256] = {};
    uint64_t pad = (alignment - pos_ % alignment) % alignment;
    while (pad > 0) {
      const auto n = std::min<uint64_t>(pad, sizeof zeros);
      bytes(zeros, n);
      pad -= n;
    }
  }
  uint64_t pos() const { return pos_; }

 private:
  std::ostream& out_;
  uint64_t pos_ = 0;
};

void write_value(ByteSink& sink, const Value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          sink.string(x);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Array>>) {
          const Array& a = *x;
          sink.put<uint32_t>(static_cast<uint32_t>(a.element_type()));
          sink.put<uint64_t>(a.size());
          if (a.element_type() == ValueType::String) {
            for (std::size_t i = 0; i < a.size(); ++i) sink.string(a.string_at(i));
          } else {
            for (std::size_t i = 0; i < a.size(); ++i) write_value(sink, a.at(i));
          }
        } else if constexpr (std::is_same_v<T, bool>) {
          sink.put<uint8_t>(x ? 1 : 0);
        } else {
          sink.put<T>(x);
        }
      },
      v.storage());
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment))
    throw GgufError("alignment " + std::to_string(alignment) + " is not a power of two");
  if (alignment != kDefaultAlignment) set("general.alignment", Value::u32(alignment));
}

void GgufWriter::set(std::string key, Value value) {
  if (key.empty()) throw GgufError("empty metadata key");
  if (key == "general.alignment") {
    if (value.type() != ValueType::UInt32)
      throw GgufError("general.alignment must be uint32");
    const uint32_t a = value.as<uint32_t>();
    if (a == 0 || !std::has_single_bit(a))
      throw GgufError("alignment " + std::to_string(a) + " is not a power of two");
    alignment_ = a;
  }
  for (auto& kv : metadata_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::copy_metadata_from(const GgufFile& file) {
  for (const auto& kv : file.metadata()) set(kv.key, kv.value);
}

bool GgufWriter::remove(std::string_view key) {
  auto it = std::find_if(metadata_.begin(), metadata_.end(),
                         [&](const auto& kv) { return kv.first == key; });
  if (it == metadata_.end()) return false;
  if (key == "general.alignment") alignment_ = kDefaultAlignment;
  metadata_.erase(it);
  return true;
}

void GgufWriter::add_tensor(std::string name, TensorType type, std::span<const uint64_t> shape,
                            std::span<const std::byte> data) {
  add_checked(std::move(name), type, shape, data, Storage::Copy);
}

void GgufWriter::add_tensor_view(std::string name, TensorType type,
                                 std::span<const uint64_t> shape,
                                 std::span<const std::byte> data) {
  add_checked(std::move(name), type, shape, data, Storage::View);
}

void GgufWriter::add_tensor_deferred(std::string name, TensorType type,
                                     std::span<const uint64_t> shape) {
  add_checked(std::move(name), type, shape, {}, Storage::Deferred);
}

void GgufWriter::add_checked(std::string name, TensorType type, std::span<const uint64_t> shape,
                             std::span<const std::byte> data, Storage storage) {
  if (name.empty()) throw GgufError("empty tensor name");
  if (shape.empty() || shape.size() > kMaxDims)
    throw GgufError("tensor '" + name + "': n_dims " + std::to_string(shape.size()) +
                    " is not in 1..4");
  for (const auto& t : tensors_) {
    if (t.name == name) throw GgufError("duplicate tensor name '" + name + "'");
  }
  uint64_t n_bytes;
  try {
    n_bytes = tensor_byte_size(type, shape);
  } catch (const GgufError& e) {
    throw GgufError("tensor '" + name + "': " + e.what());
  }
  const bool deferred = storage == Storage::Deferred;
  if (!deferred && data.size() != n_bytes)
    throw GgufError("tensor '" + name + "': got " + std::to_string(data.size()) +
                    " bytes, its type and shape need " + std::to_string(n_bytes));
  PendingTensor t{std::move(name), type, {shape.begin(), shape.end()}, n_bytes, deferred, {}, data};
  if (storage == Storage::Copy) {
    t.owned.assign(data.begin(), data.end());
    t.data = t.owned;
  }
  tensors_.push_back(std::move(t));
}

void GgufWriter::write(std::ostream& out, const TensorFiller& fill) const {
  if (!fill) {
    for (const auto& t : tensors_) {
      if (t.deferred) throw GgufError("tensor '" + t.name + "' is deferred and no filler was given");
    }
  }
  ByteSink sink(out);
  sink.put<uint32_t>(0x46554747);  // "GGUF"
  sink.put<uint32_t>(kVersion);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    sink.string(key);
    sink.put<uint32_t>(static_cast<uint32_t>(value.type()));
    write_value(sink, value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    sink.string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) sink.put<uint64_t>(d);
    sink.put<uint32_t>(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offset = align_up(offset + t.n_bytes, alignment_);
  }
  sink.pad_to(alignment_);
  std::vector<std::byte> produced;  // one deferred tensor at a time
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    if (t.deferred) {
      produced.resize(t.n_bytes);
      fill(i, produced);
      sink.bytes(produced.data(), produced.size());
    } else {
      sink.bytes(t.data.data(), t.data.size());
    }
    sink.pad_to(alignment_);
    if (!out) throw GgufError("write failed");
  }
  if (!out) throw GgufError("write failed");
}

void GgufWriter::write_file(const std::filesystem::path& path, const TensorFiller& fill) const {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw GgufError(tmp.string() + ": cannot create: " + std::strerror(errno));
    const auto discard = [&] {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
    };
    try {
      write(out, fill);
      out.flush();
      if (!out) throw GgufError("write failed");
    } catch (const GgufError& e) {
      discard();
      throw GgufError(tmp.string() + ": " + e.what());
    } catch (...) {
      discard();
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw GgufError(path.string() + ": cannot rename into place: " + ec.message());
  }
}

std::vector<std::byte> GgufWriter::to_bytes(const TensorFiller& fill) const {
  std::ostringstream out(std::ios::binary);
  write(out, fill);
  const std::string s = out.str();
  std::vector<std::byte> bytes(s.size());
  std::memcpy(bytes.data(), s.data(), s.size());
  return bytes;
}

}  // namespace lamina::gguf
