// Runs a parsed template against a set of variables.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "jinja/ast.h"

namespace lamina::model::jinja {

// Limits that keep a hostile template from exhausting the machine: the work
// one render may do (loop iterations, expressions, values built), and how
// deep evaluation (nested expressions, statements and macro calls) may go.
inline constexpr uint64_t kRenderBudget = 4'000'000;
inline constexpr std::size_t kBytesPerWorkUnit = 256;  // building strings is charged per this many bytes
inline constexpr int kMaxRenderDepth = 400;

using Variables = std::vector<std::pair<std::string, Value>>;

// Throws ChatTemplateError: Kind::Render with the line and column of the
// failing expression, or Kind::Raised for raise_exception().
std::string render(const StmtList& body, const Variables& variables);

}  // namespace lamina::model::jinja
