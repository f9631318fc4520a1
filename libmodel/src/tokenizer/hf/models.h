// Internal: the tokenizer.json models, one factory per "type".
#pragma once

#include "lamina/model/tokenizer.h"
#include "tokenizer/hf/pipeline.h"

namespace lamina::model::detail::hf {

std::unique_ptr<Model> make_bpe(const Json& spec);

}  // namespace lamina::model::detail::hf
