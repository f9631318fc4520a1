// What lamina-serve's connections draw on together, and the handles that
// give it back when an exchange ends: memory for request bodies, and the
// count of answers queued but not yet written (which stop() waits for).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lamina::serve {

// Memory for request bodies, shared by all connections: a body is read only
// once its bytes are reserved here (all of --max-body-size for a chunked
// one, whose length is not known in advance).
class BodyBudget {
 public:
  explicit BodyBudget(std::size_t bytes) : left_(bytes) {}
  bool try_reserve(std::size_t n) {
    std::size_t left = left_.load();
    do {
      if (left < n) return false;
    } while (!left_.compare_exchange_weak(left, left - n));
    return true;
  }
  void release(std::size_t n) { left_.fetch_add(n); }

 private:
  std::atomic<std::size_t> left_;
};

// One request's share of the body budget, given back when it ends.
class BodyReservation {
 public:
  BodyReservation() = default;
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  ~BodyReservation() { release(); }

  bool reserve(BodyBudget& budget, std::size_t bytes) {
    release();
    if (!budget.try_reserve(bytes)) return false;
    budget_ = &budget;
    bytes_ = bytes;
    return true;
  }
  void release() {
    if (budget_) budget_->release(bytes_);
    budget_ = nullptr;
  }

 private:
  BodyBudget* budget_ = nullptr;
  std::size_t bytes_ = 0;
};

// Counts an answer whose last bytes are queued but not yet written, until
// its exchange ends.
class UnsentAnswer {
 public:
  UnsentAnswer() = default;
  UnsentAnswer(const UnsentAnswer&) = delete;
  UnsentAnswer& operator=(const UnsentAnswer&) = delete;
  ~UnsentAnswer() {
    if (count_) --*count_;
  }
  void hold(std::atomic<uint32_t>& count) {
    count_ = &count;
    ++count;
  }

 private:
  std::atomic<uint32_t>* count_ = nullptr;
};

}  // namespace lamina::serve
