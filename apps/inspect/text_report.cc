#include <iomanip>
#include <map>
#include <sstream>

#include "report.h"

namespace lamina::inspect {
namespace {

std::string human_bytes(uint64_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  std::ostringstream s;
  if (u == 0) s << n << " B";
  else s << std::fixed << std::setprecision(2) << v << ' ' << units[u];
  return s.str();
}

std::string shape_string(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.ne[d]);
  }
  return s + "]";
}

void print_value_line(std::ostream& out, const std::string& label, const gguf::GgufFile& file,
                      const std::string& key) {
  if (const auto* v = file.find(key))
    out << "  " << std::left << std::setw(22) << label << gguf::to_display_string(*v, 4) << '\n';
}

void print_overview(std::ostream& out, const gguf::GgufFile& file) {
  out << "GGUF version " << file.version() << ", alignment " << file.alignment()
      << ", data at offset " << file.data_offset() << ", " << human_bytes(file.file_size())
      << "\n\n";
  const std::string arch = file.architecture();
  out << "architecture: " << (arch.empty() ? "(none)" : arch) << '\n';
  print_value_line(out, "name", file, "general.name");
  print_value_line(out, "file type", file, "general.file_type");
  static const std::pair<const char*, const char*> kHyper[] = {
      {"context length", "context_length"},
      {"embedding length", "embedding_length"},
      {"block count", "block_count"},
      {"feed-forward length", "feed_forward_length"},
      {"attention heads", "attention.head_count"},
      {"KV heads", "attention.head_count_kv"},
      {"key length", "attention.key_length"},
      {"value length", "attention.value_length"},
      {"RMS norm epsilon", "attention.layer_norm_rms_epsilon"},
      {"norm epsilon", "attention.layer_norm_epsilon"},
      {"rope dimensions", "rope.dimension_count"},
      {"rope base", "rope.freq_base"},
      {"experts", "expert_count"},
      {"experts used", "expert_used_count"},
  };
  if (!arch.empty()) {
    for (const auto& [label, suffix] : kHyper) print_value_line(out, label, file, arch + "." + suffix);
  }
  if (const auto* model = file.find("tokenizer.ggml.model")) {
    out << "tokenizer: " << gguf::to_display_string(*model);
    if (const auto* tokens = file.find("tokenizer.ggml.tokens");
        tokens && tokens->type() == gguf::ValueType::Array)
      out << ", " << tokens->as_array().size() << " tokens";
    if (const auto* pre = file.find("tokenizer.ggml.pre"))
      out << ", pre-tokenizer " << gguf::to_display_string(*pre);
    out << '\n';
  }
}

void print_metadata(std::ostream& out, const gguf::GgufFile& file, const ReportOptions& options) {
  out << "\nmetadata (" << file.metadata().size() << " keys):\n";
  const std::size_t limit = options.full ? 0 : options.array_items;
  for (const auto& kv : file.metadata()) {
    std::string type(gguf::value_type_name(kv.value.type()));
    if (kv.value.type() == gguf::ValueType::Array) {
      const auto& a = kv.value.as_array();
      type = "array<" + std::string(gguf::value_type_name(a.element_type())) + ">[" +
             std::to_string(a.size()) + "]";
    }
    out << "  " << kv.key << " (" << type << ") = " << gguf::to_display_string(kv.value, limit)
        << '\n';
  }
}

void print_tensors(std::ostream& out, const gguf::GgufFile& file) {
  out << "\ntensors (" << file.tensors().size() << "):\n";
  std::size_t name_width = 4;
  for (const auto& t : file.tensors()) name_width = std::max(name_width, t.name.size());
  out << "  " << std::left << std::setw(static_cast<int>(name_width)) << "name" << "  "
      << std::setw(8) << "type" << std::setw(28) << "shape" << std::right << std::setw(14)
      << "offset" << std::setw(14) << "bytes" << '\n';
  uint64_t params = 0, bytes = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> per_type;  // name -> (tensors, bytes)
  for (const auto& t : file.tensors()) {
    const std::string type(gguf::tensor_type_name(t.type));
    out << "  " << std::left << std::setw(static_cast<int>(name_width)) << t.name << "  "
        << std::setw(8) << type << std::setw(28) << shape_string(t) << std::right
        << std::setw(14) << t.offset << std::setw(14) << t.n_bytes << '\n';
    params += t.n_elements;
    bytes += t.n_bytes;
    auto& entry = per_type[type];
    entry.first += 1;
    entry.second += t.n_bytes;
  }
  out << "\ntotals: " << params << " parameters, " << bytes << " bytes (" << human_bytes(bytes)
      << ")\n";
  for (const auto& [type, entry] : per_type)
    out << "  " << std::left << std::setw(8) << type << std::right << std::setw(6) << entry.first
        << " tensors " << std::setw(14) << entry.second << " bytes\n";
}

}  // namespace

void print_text_report(std::ostream& out, const gguf::GgufFile& file, const ReportOptions& options) {
  print_overview(out, file);
  print_metadata(out, file, options);
  print_tensors(out, file);
}

}  // namespace lamina::inspect
