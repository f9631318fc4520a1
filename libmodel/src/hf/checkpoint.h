// The weights of a Hugging Face model folder: model.safetensors, or the shards
// listed by model.safetensors.index.json, mapped read-only and checked.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hf/mapped_file.h"
#include "hf/safetensors.h"

namespace lamina::model::hf {

struct CheckpointTensor {
  SafetensorsTensor tensor;
  std::string file;  // the file it came from, for messages
};

class Checkpoint {
 public:
  // Throws ModelError (or SafetensorsError) naming the file at fault.
  explicit Checkpoint(const std::filesystem::path& dir);
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // In file order, then data order.
  const std::vector<CheckpointTensor>& tensors() const { return tensors_; }
  const CheckpointTensor* find(std::string_view name) const;

 private:
  void add_file(const std::filesystem::path& path);

  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<CheckpointTensor> tensors_;
  std::vector<std::pair<std::string_view, std::size_t>> index_;  // sorted by name
};

}  // namespace lamina::model::hf
