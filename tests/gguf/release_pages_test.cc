// GgufFile::release_pages: the pages of a copied tensor leave resident
// memory and read back unchanged; ranges outside the mapping and files that
// are not mappings are left alone. GgufFile::read_ahead: a tensor's pages
// come into the page cache without being read.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

// Resident pages of this process (/proc/self/statm, second field).
long resident_pages() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  statm >> size >> resident;
  return resident;
}

uint64_t checksum(std::span<const std::byte> bytes) {
  uint64_t sum = 0;
  for (std::size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    sum = sum * 31 + word;
  }
  return sum;
}

TEST(ReleasePages, DropsResidentPagesAndKeepsTheBytes) {
  const auto dir = testing::make_temp_dir("gguf_release");
  const auto path = dir / "big.gguf";
  constexpr uint64_t kValues = uint64_t{1} << 20;  // 4 MiB of f32
  std::vector<float> values(kValues);
  for (uint64_t i = 0; i < kValues; ++i) values[i] = static_cast<float>(i % 1000) * 0.5f;
  {
    GgufWriter w;
    const uint64_t shape[] = {1024, kValues / 1024};
    w.add_tensor("t", TensorType::F32, shape, std::as_bytes(std::span(values)));
    w.write_file(path);
  }
  const GgufFile f = GgufFile::open(path);
  const auto data = f.tensor("t").data;
  const uint64_t expected = checksum(std::as_bytes(std::span(values)));
  ASSERT_EQ(checksum(data), expected);  // every page resident now

  const long page = ::sysconf(_SC_PAGESIZE);
  const long tensor_pages = static_cast<long>(data.size()) / page;
  const long before = resident_pages();
  f.release_pages(data.data(), data.size());
  const long after = resident_pages();
  EXPECT_GE(before - after, tensor_pages / 2) << "resident pages " << before << " -> " << after;
  EXPECT_EQ(checksum(data), expected) << "the bytes read back from the file";

  // Outside the mapping, empty, or past its end: nothing happens.
  f.release_pages(values.data(), values.size() * sizeof(float));
  f.release_pages(nullptr, 0);
  f.release_pages(data.data() + data.size() - 1, uint64_t{1} << 40);
  EXPECT_EQ(values[kValues - 1], static_cast<float>((kValues - 1) % 1000) * 0.5f);
  EXPECT_EQ(checksum(data), expected);

  // A parsed buffer is not a mapping: its bytes stay.
  std::vector<std::byte> bytes = testing::read_bytes(path);
  const GgufFile parsed = GgufFile::parse(bytes);
  parsed.release_pages(bytes.data(), bytes.size());
  EXPECT_EQ(checksum(parsed.tensor("t").data), expected);
  std::filesystem::remove_all(dir);
}

// Pages of [p, p + n) (p page-aligned) in the page cache, by mincore.
long cached_pages(const std::byte* p, std::size_t n) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> in_core((n + page - 1) / page);
  if (::mincore(const_cast<std::byte*>(p), n, in_core.data()) != 0) return -1;
  long count = 0;
  for (const unsigned char c : in_core) count += c & 1;
  return count;
}

TEST(ReadAhead, BringsATensorIntoThePageCache) {
  const auto dir = testing::make_temp_dir("gguf_read_ahead");
  const auto path = dir / "big.gguf";
  std::vector<float> values(uint64_t{1} << 23);  // 32 MiB
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 777);
  {
    GgufWriter w;
    const uint64_t shape[] = {1024, values.size() / 1024};
    w.add_tensor("t", TensorType::F32, shape, std::as_bytes(std::span(values)));
    w.write_file(path);
  }
  // Out of the page cache first (written back, then dropped).
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  const GgufFile f = GgufFile::open(path);
  // The tensor's second half: far enough from the header that reading the
  // header does not bring it in.
  const auto data = f.tensor("t").data.subspan(values.size() * sizeof(float) / 2);
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto* first = reinterpret_cast<const std::byte*>(reinterpret_cast<std::uintptr_t>(data.data()) / page * page);
  const std::size_t n = static_cast<std::size_t>(data.data() + data.size() - first);
  const long pages = static_cast<long>((n + page - 1) / page);
  if (cached_pages(first, n) == pages) GTEST_SKIP() << "this file system keeps the file in the page cache";

  f.read_ahead(data.data(), data.size());
  long cached = 0;
  for (int tries = 0; tries < 500 && (cached = cached_pages(first, n)) < pages; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(cached, pages);
  EXPECT_EQ(checksum(data), checksum(std::as_bytes(std::span(values)).subspan(data.size())));

  // Outside the mapping, empty, or past its end: nothing happens.
  f.read_ahead(values.data(), values.size() * sizeof(float));
  f.read_ahead(nullptr, 0);
  f.read_ahead(data.data() + data.size() - 1, uint64_t{1} << 40);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lamina::gguf
