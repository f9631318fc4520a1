// Builds the statement tree of a template from its tokens, with Jinja's
// grammar and operator precedence.
#pragma once

#include <string_view>

#include "jinja/ast.h"

namespace lamina::model::jinja {

// Templates that nest deeper (blocks in blocks, parentheses in parentheses)
// or build taller expressions (long operator chains) are refused, so that
// parsing, rendering and freeing the tree keep to a small stack.
inline constexpr int kMaxParseDepth = 64;
inline constexpr int kMaxExpressionHeight = 256;

// Throws ChatTemplateError (Kind::Syntax) naming the line and column.
StmtList parse_template(std::string_view source);

}  // namespace lamina::model::jinja
