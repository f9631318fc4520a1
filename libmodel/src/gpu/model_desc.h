// A loaded model described for libcudaexec (views of the same mapped bytes).
#pragma once

#include "lamina/cudaexec/model_desc.h"
#include "lamina/model/model.h"

namespace lamina::model::gpu {

// Throws ModelError for what the GPU path does not run (mixtures of experts).
cudaexec::ModelDesc describe_for_gpu(const Model& model, bool exact_activations);

}  // namespace lamina::model::gpu
