// GGUF metadata collected in the order it is set (a key set again keeps its
// place and takes the new value), as a converter writes it.
#pragma once

#include <string>
#include <vector>

#include "lamina/gguf/file.h"

namespace lamina::model::hf {

class MetadataBuilder {
 public:
  void set(const std::string& key, gguf::Value value) {
    for (auto& kv : pairs_) {
      if (kv.key == key) {
        kv.value = std::move(value);
        return;
      }
    }
    pairs_.push_back({key, std::move(value), 0});
  }
  const gguf::Value* find(const std::string& key) const {
    for (const auto& kv : pairs_) {
      if (kv.key == key) return &kv.value;
    }
    return nullptr;
  }
  std::vector<gguf::KeyValue> take() { return std::move(pairs_); }

 private:
  std::vector<gguf::KeyValue> pairs_;
};

}  // namespace lamina::model::hf
