// A loaded model described for libcudaexec (views of the same mapped bytes).
#pragma once

#include "backend/module_abi.h"
#include "lamina/cudaexec/model_desc.h"
#include "lamina/model/model.h"

namespace lamina::model::gpu {

// Throws ModelError for what the GPU path does not run. `host` lends
// libmodel's expert router and GELU table.
cudaexec::ModelDesc describe_for_gpu(const Model& model, bool exact_activations, const backend::Host& host);

}  // namespace lamina::model::gpu
