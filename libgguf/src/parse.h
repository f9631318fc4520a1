// Internal: fills a GgufFile from its bytes (parser.cc).
#pragma once

#include "lamina/gguf/file.h"

namespace lamina::gguf {

void parse_into(GgufFile& f, const ReadLimits& limits);

}  // namespace lamina::gguf
