#include "hf/checkpoint.h"

#include <algorithm>
#include <map>
#include <set>

#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

}  // namespace

Checkpoint::Checkpoint(const std::filesystem::path& dir) {
  const auto index_path = dir / kIndexFile;
  std::map<std::string, std::string> weight_map;
  if (std::filesystem::exists(index_path)) {
    weight_map = parse_safetensors_index(read_text_file(index_path), index_path.string());
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : weight_map) shards.insert(shard);
    for (const auto& shard : shards) add_file(dir / shard);
  } else if (std::filesystem::exists(dir / kSingleFile)) {
    add_file(dir / kSingleFile);
  } else {
    throw ModelError(dir.string() + ": no " + kSingleFile + " and no " + kIndexFile +
                     " (only safetensors checkpoints are read)");
  }

  for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace_back(tensors_[i].tensor.name, i);
  std::sort(index_.begin(), index_.end());
  for (std::size_t i = 1; i < index_.size(); ++i) {
    if (index_[i].first == index_[i - 1].first)
      throw ModelError("tensor '" + std::string(index_[i].first) + "' is stored twice: in " +
                       tensors_[index_[i - 1].second].file + " and in " + tensors_[index_[i].second].file);
  }
  if (weight_map.empty()) return;
  // The index and the shards must agree: each tensor where the index says.
  for (const auto& t : tensors_) {
    const auto it = weight_map.find(t.tensor.name);
    const std::string shard_name = std::filesystem::path(t.file).filename().string();
    if (it == weight_map.end())
      throw ModelError(t.file + ": tensor '" + t.tensor.name + "' is not listed in " + kIndexFile);
    if (it->second != shard_name)
      throw ModelError(t.file + ": tensor '" + t.tensor.name + "' is listed in " + kIndexFile + " as being in " +
                       it->second);
  }
  for (const auto& [tensor, shard] : weight_map) {
    if (!find(tensor))
      throw ModelError((dir / kIndexFile).string() + ": tensor '" + tensor + "' is not in " + shard);
  }
}

void Checkpoint::add_file(const std::filesystem::path& path) {
  files_.push_back(std::make_unique<MappedFile>(path));
  SafetensorsFile parsed = parse_safetensors(files_.back()->bytes(), path.string());
  for (auto& t : parsed.tensors) tensors_.push_back({std::move(t), path.string()});
}

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
  const auto it = std::lower_bound(index_.begin(), index_.end(), name,
                                   [](const auto& e, std::string_view n) { return e.first < n; });
  if (it == index_.end() || it->first != name) return nullptr;
  return &tensors_[it->second];
}

}  // namespace lamina::model::hf
