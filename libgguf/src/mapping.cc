#include "mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace lamina::gguf {
namespace {

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

std::string describe(const std::filesystem::path& path, const char* what) {
  return path.string() + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

GgufFile::Mapping::Mapping(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw GgufError(describe(path, "cannot open"));
  FdCloser closer(fd);

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw GgufError(describe(path, "cannot stat"));
  if (!S_ISREG(st.st_mode)) throw GgufError(path.string() + ": not a regular file");
  size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return;  // empty: the parser reports the missing header

  addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    addr = nullptr;
    throw GgufError(describe(path, "cannot map"));
  }
}

GgufFile::Mapping::~Mapping() {
  if (addr) ::munmap(addr, size);
}

namespace {

// The whole pages of [p, p + n) that lie in [addr, addr + size), as
// [first, last) (empty when there are none).
std::pair<std::uintptr_t, std::uintptr_t> pages_within(const void* addr, std::size_t size, const void* p,
                                                       std::size_t n, bool partial) {
  const auto begin = reinterpret_cast<std::uintptr_t>(addr);
  const auto end = begin + size;
  const auto from = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = from > begin ? from : begin;
  const std::uintptr_t hi = from + n < end && from + n > from ? from + n : end;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Releasing keeps the pages that hold bytes outside [p, p + n); reading
  // ahead takes them.
  const std::uintptr_t first = partial ? lo / page * page : (lo + page - 1) / page * page;
  const std::uintptr_t last = partial ? (hi + page - 1) / page * page : hi / page * page;
  return {first, last};
}

}  // namespace

void GgufFile::Mapping::release(const void* p, std::size_t n) const {
  if (!addr || n == 0) return;
  const auto [first, last] = pages_within(addr, size, p, n, false);
  // A private read-only file mapping: dropped pages are read again from the
  // file. Advice only, so a failure changes nothing but memory use.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void GgufFile::Mapping::read_ahead(const void* p, std::size_t n) const {
  if (!addr || n == 0) return;
  const auto [first, last] = pages_within(addr, size, p, n, true);
  // Starts reading what is not yet in the page cache and returns: advice
  // only, so a failure changes nothing but speed. Linux reads at most the
  // larger of a device's io_pages and read_ahead_kb per call (8 MiB here,
  // often 128 KiB to 1 MiB), so a long range goes in 512 KiB pieces.
  constexpr std::uintptr_t kPiece = std::uintptr_t{512} << 10;
  for (std::uintptr_t at = first; at < last; at += kPiece) {
    ::madvise(reinterpret_cast<void*>(at), last - at < kPiece ? last - at : kPiece, MADV_WILLNEED);
  }
}

}  // namespace lamina::gguf
