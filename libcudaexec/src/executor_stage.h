// One device's part of a model in the executor: a run of consecutive layers
// (every layer on one device, or the layers split over several, each stage
// handing the residual stream to the next), or one rank's shard of every
// layer under tensor parallelism; with its weights, KV cache, workspace,
// stream, events and captured graphs.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <vector>

#include "device_memory.h"
#include "device_weights.h"
#include "forward_step.h"
#include "lamina/cudaexec/executor.h"

namespace lamina::cudaexec::detail {

struct Stage {
  // `m` is the model as the step sees it (a rank's shard_config under tensor
  // parallelism), `whole` the model itself; the step keeps `m` and `in`: the
  // executor's own copies. `comm`: the rank's communicator (null for one rank).
  Stage(const model::ModelConfig& m, const model::ModelConfig& whole, const model::Weights& w, const ExecutorInputs& in,
        const ExecutorOptions& o, StepSizes sizes, int device, LayerRange range, uint32_t n_blocks,
        uint32_t blocks_per_seq, const std::vector<uint32_t>& tables, ncclComm_t comm = nullptr);
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  int device;
  LayerRange range;
  DeviceInfo info;
  TensorParallelComm tp;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;   // the step's residual stream is ready for the next stage
  cudaEvent_t taken = nullptr;  // the previous stage's residual stream is copied here
  cudaEvent_t staged[2] = {};   // the copies from each host staging buffer have run
  DeviceWeights weights;
  DeviceAllocation kv_storage;
  DeviceAllocation kv_tables;  // [n_seq][blocks_per_seq]
  KvView kv;
  DeviceAllocation step_storage;
  StepBuffers buffers;
  std::unique_ptr<ForwardStep> step;
  std::map<uint32_t, cudaGraphExec_t> graphs;
};

// Consecutive runs of layers, one per device, in proportion to the devices'
// free memory (each run at least one layer).
std::vector<LayerRange> split_layers(uint32_t n_layer, const std::vector<int>& devices);

}  // namespace lamina::cudaexec::detail
