// Builds against an installed libgguf through pkg-config only: reads a file.
#include <lamina/gguf/file.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer FILE.gguf\n";
    return 2;
  }
  try {
    const auto file = lamina::gguf::GgufFile::open(argv[1]);
    std::cout << file.architecture() << ' ' << file.tensors().size() << " tensors "
              << file.get_u32(file.architecture() + ".block_count") << " blocks\n";
  } catch (const lamina::gguf::GgufError& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  return 0;
}
