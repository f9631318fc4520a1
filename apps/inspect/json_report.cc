#include <nlohmann/json.hpp>

#include "report.h"

namespace lamina::inspect {
namespace {

using nlohmann::json;

json to_json(const gguf::Value& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<const gguf::Array>>) {
          json arr = json::array();
          for (std::size_t i = 0; i < x->size(); ++i) arr.push_back(to_json(x->at(i)));
          return arr;
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t> ||
                             std::is_same_v<T, uint32_t>) {
          return static_cast<uint64_t>(x);
        } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> ||
                             std::is_same_v<T, int32_t>) {
          return static_cast<int64_t>(x);
        } else {
          return x;
        }
      },
      v.storage());
}

}  // namespace

void print_json_report(std::ostream& out, const gguf::GgufFile& file) {
  json doc;
  doc["version"] = file.version();
  doc["alignment"] = file.alignment();
  doc["data_offset"] = file.data_offset();
  json metadata = json::object();
  for (const auto& kv : file.metadata()) metadata[kv.key] = to_json(kv.value);
  doc["metadata"] = std::move(metadata);
  json tensors = json::array();
  for (const auto& t : file.tensors()) {
    json shape = json::array();
    for (uint64_t d : t.shape()) shape.push_back(d);
    tensors.push_back({{"name", t.name},
                       {"type", std::string(gguf::tensor_type_name(t.type))},
                       {"shape", std::move(shape)},
                       {"offset", t.offset},
                       {"bytes", t.n_bytes}});
  }
  doc["tensors"] = std::move(tensors);
  // Token strings may hold bytes that are not UTF-8; replace rather than fail.
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace lamina::inspect
