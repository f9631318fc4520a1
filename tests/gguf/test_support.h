// Shared helpers of the libgguf tests: locating the test data and reading files.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"

namespace lamina::gguf::testing {

// The test data folder, or an empty path when it is missing (LAMINA_TESTDATA_DIR
// unset or the folder absent).
std::filesystem::path testdata_dir();

// Skips the current test with a message when the test data folder is missing.
#define LAMINA_REQUIRE_TESTDATA()                                                   \
  do {                                                                              \
    if (::lamina::gguf::testing::testdata_dir().empty())                            \
      GTEST_SKIP() << "test data folder not found (LAMINA_TESTDATA_DIR): skipping"; \
  } while (0)

// Every *.gguf below the test data folder, recursively, sorted by path.
std::vector<std::filesystem::path> all_testdata_gguf_files();

// Path of a file inside the test data folder ("models/stories260K.gguf").
std::filesystem::path testdata_file(const std::string& relative);

// The whole file as bytes. Fails the test (and returns empty) when unreadable.
std::vector<std::byte> read_bytes(const std::filesystem::path& path);

// A test data file's bytes, read once per process and kept.
const std::vector<std::byte>& testdata_bytes(const std::string& relative);

// Parses an exact-size heap copy of `bytes`, so AddressSanitizer flags any
// read past its end. Returns the error, or nothing when the parse succeeded;
// any exception other than GgufError escapes and fails the test.
std::optional<GgufError> parse_error(std::span<const std::byte> bytes);

// A fresh folder for files a test writes, removed by the caller's fixture.
std::filesystem::path make_temp_dir(const std::string& stem);

}  // namespace lamina::gguf::testing
