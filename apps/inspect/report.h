// The two renderings of a GGUF file that lamina-inspect prints.
#pragma once

#include <ostream>

#include "lamina/gguf/file.h"

namespace lamina::inspect {

struct ReportOptions {
  bool full = false;            // print long arrays whole
  std::size_t array_items = 8;  // items shown of a long array otherwise
};

void print_text_report(std::ostream& out, const gguf::GgufFile& file, const ReportOptions& options);
void print_json_report(std::ostream& out, const gguf::GgufFile& file);

}  // namespace lamina::inspect
