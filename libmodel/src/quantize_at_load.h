// Internal: --quantize at load. The model's float matrices are quantized into
// owned buffers, for users who want speed over exactness.
#pragma once

#include "lamina/gguf/file.h"
#include "lamina/quant/format.h"

namespace lamina::model {

// Returns a file with the same metadata whose 2-D float weights (F32, F16,
// BF16; not norms or position tables, and only where the row length is a
// whole number of blocks) are stored in `format`; the other tensors stay
// views of `file`, which the result keeps alive. Throws ModelError for a
// format that cannot hold weights.
gguf::GgufFile quantize_weights(gguf::GgufFile file, quant::QuantFormat format);

}  // namespace lamina::model
