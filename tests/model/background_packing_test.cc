// Packing in the background (Linear::prepare_in_background): whatever the
// steps at which the packed copies are swapped in (none, all before the
// first step, one matrix per step, all at a later step), every product
// gives the bits of the matrices packed at load; the file's pages of a
// matrix are let go when, and only when, its copy is swapped in.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lamina/quant/format.h"
#include "lamina/quant/packed.h"
#include "lamina/quant/reference.h"
#include "lamina/quant/thread_pool.h"
#include "linear.h"

namespace lamina::model::cpu {
namespace {

using quant::QuantFormat;

struct OwnedMatrix {
  std::vector<std::byte> bytes;
  Matrix m;
};

OwnedMatrix random_matrix(QuantFormat format, uint32_t n_out, uint32_t n_in, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  OwnedMatrix w;
  const std::size_t row = quant::row_bytes(format, n_in);
  w.bytes.resize(row * n_out);
  std::vector<float> values(n_in);
  for (uint32_t o = 0; o < n_out; ++o) {
    for (float& v : values) v = normal(rng);
    quant::quantize_row_ref(format, values.data(), w.bytes.data() + o * row, n_in);
  }
  w.m = {format, w.bytes.data(), n_in, n_out, 1, row};
  return w;
}

// A few matrices of the formats of a Q4_K_M file and more: Q4_K and Q5_K go
// to the background, Q8_0 is packed at load, Q6_K never packed.
class BackgroundPacking : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(5);
    for (const auto& [f, n_out, n_in] : std::vector<std::tuple<QuantFormat, uint32_t, uint32_t>>{
             {QuantFormat::Q4_K, 40, 512}, {QuantFormat::Q5_K, 33, 256}, {QuantFormat::Q4_K, 17, 768},
             {QuantFormat::Q8_0, 20, 256}, {QuantFormat::Q6_K, 16, 256}}) {
      owned_.push_back(random_matrix(f, n_out, n_in, rng));
    }
    for (const OwnedMatrix& w : owned_) ptrs_.push_back(&w.m);
    for (const std::size_t rows : {std::size_t{5}, std::size_t{1}, std::size_t{1}, std::size_t{3}, std::size_t{1},
                                   std::size_t{1}, std::size_t{7}}) {
      std::vector<float> x(rows * 768);
      std::normal_distribution<float> normal;
      for (float& v : x) v = normal(rng);
      steps_.push_back(std::move(x));
    }
  }

  // Every matrix against each step's input, in order; before(s) runs
  // before step s.
  template <class Before>
  std::vector<std::vector<float>> run(Linear& linear, Before before) {
    std::vector<std::vector<float>> out;
    for (std::size_t s = 0; s < steps_.size(); ++s) {
      before(s);
      const std::size_t rows = steps_[s].size() / 768;
      for (const Matrix* w : ptrs_) {
        std::vector<float> x(rows * w->n_in);
        for (std::size_t r = 0; r < rows; ++r) std::memcpy(&x[r * w->n_in], &steps_[s][r * 768], w->n_in * 4);
        std::vector<float> y(rows * w->n_out);
        linear.apply(*w, x.data(), rows, y.data());
        out.push_back(std::move(y));
      }
    }
    return out;
  }

  std::vector<OwnedMatrix> owned_;
  std::vector<const Matrix*> ptrs_;
  std::vector<std::vector<float>> steps_;
};

void expect_same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << what;
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0)
        << what << ": product " << i << " (step " << i / 5 << ", matrix " << i % 5 << ")";
  }
}

TEST_F(BackgroundPacking, SwapsAtAnyStepGiveThePackedBits) {
  if (!quant::packed_layout_is_faster(QuantFormat::Q4_K)) GTEST_SKIP() << "this CPU packs no Q4_K";
  quant::ThreadPool pool(2);
  const auto nothing = [](const Matrix&) {};
  Linear at_load(pool, false);
  at_load.prepare(ptrs_, nothing, nothing);
  const auto expected = run(at_load, [](std::size_t) {});

  Linear file_layout(pool, false);
  const auto unpacked = run(file_layout, [](std::size_t) {});
  std::size_t differ = 0;
  for (std::size_t i = 0; i < unpacked.size(); ++i) {
    differ += std::memcmp(unpacked[i].data(), expected[i].data(), unpacked[i].size() * 4) != 0;
  }
  EXPECT_GT(differ, 0u) << "the unpacked kernels' bits differ from the packed ones (what this test is about)";

  // Swapped in: never, all before step k, or one matrix before each step.
  for (int schedule = -2; schedule <= static_cast<int>(steps_.size()); ++schedule) {
    SCOPED_TRACE("schedule " + std::to_string(schedule));
    Linear linear(pool, false);
    std::map<const std::byte*, int> released;
    std::size_t adopted = 0;
    linear.prepare_in_background(
        ptrs_, [&](const Matrix& m) { ++released[m.data]; }, nothing, schedule == -1 ? 1 : std::size_t{1} << 30);
    // Q8_0 is packed at load, Q4_K and Q5_K wait.
    ASSERT_EQ(released.size(), 1u);
    EXPECT_EQ(released.count(owned_[3].m.data), 1u);
    const auto got = run(linear, [&](std::size_t s) {
      BackgroundPacker* bg = linear.background();
      if (schedule == -1 && bg) {
        bg->wait_ready(1);  // at most one copy pending: one swap per step
        linear.adopt_packed();
        EXPECT_LE(released.size(), s + 2);
      } else if (schedule >= 0 && static_cast<std::size_t>(schedule) == s && bg) {
        bg->wait_ready(3);
        linear.adopt_packed();
      }
      adopted = released.size() - 1;
    });
    expect_same_bits(got, expected, "background packing");
    if (schedule == -2) {
      EXPECT_EQ(adopted, 0u);
    } else if (schedule < static_cast<int>(steps_.size())) {
      EXPECT_EQ(adopted, 3u);
      EXPECT_EQ(linear.background(), nullptr) << "the packer is gone once everything is swapped in";
    }
    for (const auto& [data, n] : released) EXPECT_EQ(n, 1) << "pages let go once";
  }
}

TEST_F(BackgroundPacking, ExactProductsPackNothing) {
  quant::ThreadPool pool(1);
  Linear linear(pool, true);
  std::size_t released = 0;
  linear.prepare_in_background(ptrs_, [&](const Matrix&) { ++released; }, [](const Matrix&) {}, 1);
  EXPECT_EQ(linear.background(), nullptr);
  linear.adopt_packed();
  EXPECT_EQ(released, 0u);
}

}  // namespace
}  // namespace lamina::model::cpu
