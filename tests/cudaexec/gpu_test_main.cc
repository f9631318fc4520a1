// main() of the GPU tests: exit code 77 (meson's SKIP) with a clear message
// when this machine has no CUDA device, so CI without a GPU stays green.
#include <gtest/gtest.h>

#include <cstdio>

#include "lamina/cudaexec/device.h"

int main(int argc, char** argv) {
  if (lamina::cudaexec::device_count() == 0) {
    std::fprintf(stderr, "SKIP: no CUDA device visible (these tests need an NVIDIA GPU)\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
