// Prints lamina-bench results as a markdown table, JSON or CSV.
#pragma once

#include <ostream>
#include <string>

#include "bench_runner.h"

namespace lamina::bench {

void print_results(std::ostream& out, const std::string& format, const BenchOptions& options, const BenchRun& run);

}  // namespace lamina::bench
