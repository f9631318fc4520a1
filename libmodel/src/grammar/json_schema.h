// Internal: JSON schemas compiled to GBNF.
#pragma once

#include <string>
#include <string_view>

#include "lamina/model/grammar.h"

namespace lamina::model::grammar {

// Throws GrammarError naming the JSON pointer of an unsupported keyword or an
// impossible constraint.
std::string compile_json_schema(std::string_view schema, const JsonSchemaOptions& options);

// The same rules with every rule name starting with `prefix` and the schema's
// own rule named `prefix`root, without the primitives (json_primitives_gbnf),
// so that several schemas fit in one grammar. `prefix` is made of GBNF name
// characters (letters, digits, '-') and never starts with "json-".
std::string compile_json_schema_rules(std::string_view schema, const JsonSchemaOptions& options,
                                      const std::string& prefix);

// The rules (json-value, json-string, ws, ...) that compiled schemas refer to.
const char* json_primitives_gbnf();

// `text` as a GBNF string literal.
std::string gbnf_literal(const std::string& text);

// Any JSON object, as GBNF (rule `root`).
const std::string& json_object_gbnf();

// The GBNF of a regular expression's language inside a JSON string (the
// subset: literals, escapes \d \w \s, classes, groups, |, . and the
// quantifiers * + ? {m,n}; anchored at both ends). Throws GrammarError.
std::string regex_to_gbnf(std::string_view pattern, const std::string& where);

}  // namespace lamina::model::grammar
