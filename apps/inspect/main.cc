// lamina-inspect: a readable (or JSON) summary of a GGUF file.
#include <CLI/CLI.hpp>

#include <iostream>

#include "lamina/gguf/file.h"
#include "report.h"
#include "tensor_dump.h"

int main(int argc, char** argv) {
  CLI::App app{"lamina-inspect: print the header, metadata and tensor table of a GGUF file", "lamina-inspect"};
  app.set_version_flag("--version", std::string("lamina-inspect ") + LAMINA_VERSION);
  std::string path;
  bool json = false;
  lamina::inspect::ReportOptions options;
  app.add_option("FILE", path, "GGUF file to inspect")->required();
  app.add_flag("--json", json, "print one JSON document instead of text");
  app.add_flag("--full", options.full, "print long metadata arrays whole");
  std::string tensor_name, dump_path;
  auto* tensor_opt = app.add_option("--tensor", tensor_name, "tensor to dump (with --dump-f32)");
  auto* dump_opt = app.add_option("--dump-f32", dump_path,
                                  "write --tensor's values, dequantized, as raw little-endian f32");
  tensor_opt->needs(dump_opt);
  dump_opt->needs(tensor_opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    const auto file = lamina::gguf::GgufFile::open(path);
    if (!dump_path.empty()) {
      lamina::inspect::dump_tensor_f32(file, tensor_name, dump_path);
      return 0;
    }
    if (json) {
      lamina::inspect::print_json_report(std::cout, file);
    } else {
      lamina::inspect::print_text_report(std::cout, file, options);
    }
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "lamina-inspect: error writing output\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "lamina-inspect: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
