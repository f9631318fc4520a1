// Packing weight matrices on a thread of its own while the forward pass
// runs on the file's layout (Linear's background packing).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "lamina/model/weights.h"
#include "lamina/quant/packed.h"

namespace lamina::model::cpu {

class BackgroundPacker {
 public:
  struct Packed {
    Matrix matrix;
    quant::PackedWeights weights;
  };

  // Starts a thread that packs `matrices` one after the other (calling
  // soon(w) before reading each), and waits while the copies not yet taken
  // hold max_pending_bytes or more (until they are swapped in, the file's
  // pages and the copies are both resident) or while paused. It runs at the
  // priority of the others: at the lowest one, an unprivileged process
  // could never raise it again, and the packing then waited for idle cores
  // that a decode on every core never leaves (measured: no swap in 20 s
  // of an 8B decode).
  BackgroundPacker(std::vector<Matrix> matrices, std::size_t max_pending_bytes,
                   std::function<void(const Matrix&)> soon);
  // Stops after the matrix in hand and joins the thread.
  ~BackgroundPacker();
  BackgroundPacker(const BackgroundPacker&) = delete;
  BackgroundPacker& operator=(const BackgroundPacker&) = delete;

  // The copies finished since the last call, in packing order. Rethrows
  // the error of the packing thread, if it failed (it stops then), at
  // every call.
  std::vector<Packed> take();
  // Blocks until at least n copies wait to be taken or every matrix has
  // been packed (or the thread failed).
  void wait_ready(std::size_t n);
  // Holds the packing before the next matrix (after the one in hand), or
  // lets it go on.
  void pause(bool paused);
  // Whether every matrix has been packed and taken.
  bool finished();

 private:
  void run();

  std::vector<Matrix> matrices_;
  std::size_t max_pending_bytes_;
  std::function<void(const Matrix&)> soon_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Packed> ready_;     // guarded by mutex_
  std::size_t pending_bytes_ = 0;  // of ready_, guarded by mutex_
  std::size_t packed_ = 0;         // matrices done, guarded by mutex_
  std::size_t taken_ = 0;          // guarded by mutex_
  std::exception_ptr error_;       // guarded by mutex_
  bool stop_ = false;              // guarded by mutex_
  bool paused_ = false;            // guarded by mutex_
  std::thread thread_;
};

}  // namespace lamina::model::cpu
