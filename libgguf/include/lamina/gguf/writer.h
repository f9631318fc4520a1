// Writing GGUF v3 files: metadata of every type, tensors of every type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/types.h"
#include "lamina/gguf/value.h"
#include "lamina/gguf/export.h"

namespace lamina::gguf {

// Collects metadata and tensors, then writes a valid file. Metadata keeps the
// order of the first `set` of each key; setting a key again replaces its value.
class LAMINA_GGUF_API GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = kDefaultAlignment);

  void set(std::string key, Value value);
  // Copies every metadata pair of `file` (alignment included).
  void copy_metadata_from(const GgufFile& file);
  bool remove(std::string_view key);

  // Adds a tensor; `data` must hold exactly the type's byte size for `shape`
  // (ne0 first). The data is copied.
  void add_tensor(std::string name, TensorType type, std::span<const uint64_t> shape,
                  std::span<const std::byte> data);
  // Like add_tensor, but keeps only a view: `data` must outlive the writer's
  // last write (e.g. a mapping of the input file).
  void add_tensor_view(std::string name, TensorType type, std::span<const uint64_t> shape,
                       std::span<const std::byte> data);

  // Declares a tensor whose bytes are produced only while the file is
  // written (see TensorFiller), so a large model never has to be held in
  // memory whole.
  void add_tensor_deferred(std::string name, TensorType type, std::span<const uint64_t> shape);

  // Produces a deferred tensor's bytes: called once per deferred tensor, in
  // the order tensors were added, with `index` its position among all tensors
  // and `out` exactly its byte size. Exceptions propagate out of the write.
  using TensorFiller = std::function<void(std::size_t index, std::span<std::byte> out)>;

  // Writes the whole file. Throws GgufError on an I/O problem, or when a
  // tensor is deferred and `fill` is empty.
  void write(std::ostream& out, const TensorFiller& fill = {}) const;
  // Writes to a temporary next to `path` and renames it into place, so a
  // failure (a filler's exception included) never leaves a file behind.
  void write_file(const std::filesystem::path& path, const TensorFiller& fill = {}) const;
  std::vector<std::byte> to_bytes(const TensorFiller& fill = {}) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> shape;
    uint64_t n_bytes;
    bool deferred;
    std::vector<std::byte> owned;
    std::span<const std::byte> data;  // into `owned` or the caller's buffer
  };
  enum class Storage { Copy, View, Deferred };
  void add_checked(std::string name, TensorType type, std::span<const uint64_t> shape,
                   std::span<const std::byte> data, Storage storage);

  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace lamina::gguf
