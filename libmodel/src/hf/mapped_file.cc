#include "hf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

[[noreturn]] void fail_errno(const std::filesystem::path& path, const char* what) {
  throw ModelError(path.string() + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail_errno(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ModelError(path.string() + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    addr_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr_ == MAP_FAILED) {
      addr_ = nullptr;
      ::close(fd);
      fail_errno(path, "cannot map");
    }
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (addr_) ::munmap(addr_, size_);
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path.string() + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw ModelError(path.string() + ": read error");
  return s.str();
}

}  // namespace lamina::model::hf
