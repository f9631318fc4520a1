// Internal: GBNF text to the byte-level grammar.
#pragma once

#include <string_view>

#include "grammar/grammar_ir.h"

namespace lamina::model::grammar {

// Throws GrammarError naming the line and column of the first problem.
Ir parse_gbnf(std::string_view text, std::string_view root);

}  // namespace lamina::model::grammar
