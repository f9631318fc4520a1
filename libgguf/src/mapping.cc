#include "mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

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

void GgufFile::Mapping::release(const void* p, std::size_t n) const {
  if (!addr || n == 0) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(addr);
  const auto end = begin + size;
  const auto from = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = from > begin ? from : begin;
  const std::uintptr_t hi = from + n < end && from + n > from ? from + n : end;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = (lo + page - 1) / page * page;
  const std::uintptr_t last = hi / page * page;
  // A private read-only file mapping: dropped pages are read again from the
  // file. Advice only, so a failure changes nothing but memory use.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace lamina::gguf
