#include "hf/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace lamina::model::hf {
namespace {

using Json = nlohmann::json;

constexpr int kMaxJsonDepth = 16;

[[noreturn]] void fail(std::string_view file, const std::string& what) {
  throw SafetensorsError(std::string(file) + ": " + what);
}

// Parses `text` as JSON, rejecting duplicate keys (which nlohmann would keep
// silently, the last one winning) and nesting deeper than any real header.
Json parse_json(std::string_view text, std::string_view file, const char* what) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxJsonDepth) fail(file, std::string(what) + " nests deeper than " + std::to_string(kMaxJsonDepth));
    switch (event) {
      case Json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case Json::parse_event_t::object_end: open_objects.pop_back(); break;
      case Json::parse_event_t::key:
        if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text.begin(), text.end(), check);
  } catch (const Json::exception& e) {
    fail(file, std::string(what) + " is not valid JSON: " + e.what());
  }
  if (!duplicate.empty()) fail(file, std::string(what) + " has the key '" + duplicate + "' twice");
  return j;
}

Dtype parse_dtype(const Json& value, std::string_view file, const std::string& who) {
  if (!value.is_string()) fail(file, who + ": dtype is not a string");
  const std::string& s = value.get_ref<const std::string&>();
  if (s == "F32") return Dtype::F32;
  if (s == "F16") return Dtype::F16;
  if (s == "BF16") return Dtype::BF16;
  if (s == "U8") return Dtype::U8;
  static const std::set<std::string> kKnownOthers = {"F64", "I64", "I32", "I16", "I8", "U64", "U32",
                                                     "U16", "BOOL", "F8_E4M3", "F8_E5M2",
                                                     "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"};
  if (kKnownOthers.count(s) != 0)
    fail(file, who + ": dtype " + s + " is not supported (only F32, F16 and BF16 weights, U8 MXFP4 blocks)");
  fail(file, who + ": unknown dtype '" + s + "'");
}

uint64_t unsigned_number(const Json& value, std::string_view file, const std::string& what) {
  if (!value.is_number_unsigned()) fail(file, what + " is not a non-negative integer");
  return value.get<uint64_t>();
}

std::vector<uint64_t> parse_shape(const Json& value, std::string_view file, const std::string& who) {
  if (!value.is_array()) fail(file, who + ": shape is not an array");
  if (value.size() > kMaxRank)
    fail(file, who + ": shape has " + std::to_string(value.size()) + " dimensions (at most " +
                   std::to_string(kMaxRank) + ")");
  std::vector<uint64_t> shape;
  for (const Json& d : value) shape.push_back(unsigned_number(d, file, who + ": a shape dimension"));
  return shape;
}

// The byte count of `shape` in `dtype`, or a failure naming the tensor on overflow.
uint64_t byte_count(const std::vector<uint64_t>& shape, Dtype dtype, std::string_view file, const std::string& who) {
  uint64_t n = dtype_size(dtype);
  for (uint64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) fail(file, who + ": the shape's byte size overflows");
    n *= d;
  }
  return n;
}

std::map<std::string, std::string> parse_metadata(const Json& value, std::string_view file) {
  if (!value.is_object()) fail(file, "__metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : value.items()) {
    if (!v.is_string()) fail(file, "__metadata__ entry '" + k + "' is not a string");
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

}  // namespace

std::string_view dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: return "F32";
    case Dtype::F16: return "F16";
    case Dtype::BF16: return "BF16";
    case Dtype::U8: return "U8";
  }
  return "?";
}

std::size_t dtype_size(Dtype dtype) { return dtype == Dtype::F32 ? 4 : dtype == Dtype::U8 ? 1 : 2; }

uint64_t SafetensorsTensor::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // bounded by the data size when parsed
  return n;
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view file) {
  if (bytes.size() < 8) fail(file, "too small for a safetensors header (" + std::to_string(bytes.size()) + " bytes)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[static_cast<std::size_t>(i)]);
  if (header_len > bytes.size() - 8)
    fail(file, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(bytes.size()) + " bytes)");
  if (header_len > kMaxHeaderBytes)
    fail(file, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, header_len);
  if (header.empty() || header.front() != '{') fail(file, "the header does not start with '{'");
  const Json root = parse_json(header, file, "the header");
  if (!root.is_object()) fail(file, "the header is not a JSON object");

  const std::span<const std::byte> data = bytes.subspan(8 + header_len);
  SafetensorsFile out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // parallel to out.tensors
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      out.metadata = parse_metadata(entry, file);
      continue;
    }
    const std::string who = "tensor '" + name + "'";
    if (name.empty()) fail(file, "a tensor has an empty name");
    if (!entry.is_object()) fail(file, who + ": its entry is not an object");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(field)) fail(file, who + ": missing '" + field + "'");
    }
    SafetensorsTensor t;
    t.name = name;
    t.dtype = parse_dtype(entry["dtype"], file, who);
    t.shape = parse_shape(entry["shape"], file, who);
    const Json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2) fail(file, who + ": data_offsets is not a pair [begin, end]");
    const uint64_t begin = unsigned_number(offsets[0], file, who + ": data_offsets begin");
    const uint64_t end = unsigned_number(offsets[1], file, who + ": data_offsets end");
    if (begin > end) fail(file, who + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") is reversed");
    if (end > data.size())
      fail(file, who + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") run past the data section (" + std::to_string(data.size()) + " bytes)");
    const uint64_t want = byte_count(t.shape, t.dtype, file, who);
    if (end - begin != want)
      fail(file, who + ": data_offsets cover " + std::to_string(end - begin) + " bytes, its " +
                     std::string(dtype_name(t.dtype)) + " shape needs " + std::to_string(want));
    t.data = data.subspan(begin, end - begin);
    out.tensors.push_back(std::move(t));
    ranges.emplace_back(begin, end);
  }

  std::vector<std::size_t> order(out.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ranges[a] < ranges[b]; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto& prev = ranges[order[k - 1]];
    const auto& cur = ranges[order[k]];
    if (cur.first < prev.second)
      fail(file, "tensor '" + out.tensors[order[k]].name + "' overlaps the data of tensor '" +
                     out.tensors[order[k - 1]].name + "'");
  }
  std::vector<SafetensorsTensor> sorted;
  sorted.reserve(order.size());
  for (std::size_t i : order) sorted.push_back(std::move(out.tensors[i]));
  out.tensors = std::move(sorted);
  return out;
}

std::map<std::string, std::string> parse_safetensors_index(std::string_view json_text, std::string_view file) {
  const Json root = parse_json(json_text, file, "the index");
  if (!root.is_object()) fail(file, "the index is not a JSON object");
  if (!root.contains("weight_map") || !root["weight_map"].is_object()) fail(file, "no 'weight_map' object");
  std::map<std::string, std::string> out;
  for (const auto& [tensor, shard] : root["weight_map"].items()) {
    if (!shard.is_string()) fail(file, "weight_map entry for tensor '" + tensor + "' is not a file name");
    const std::string& name = shard.get_ref<const std::string&>();
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
      fail(file, "weight_map entry for tensor '" + tensor + "' names '" + name + "', not a file in the model folder");
    out.emplace(tensor, name);
  }
  if (out.empty()) fail(file, "the weight_map is empty");
  return out;
}

}  // namespace lamina::model::hf
