#include "bench_report.h"

#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lamina/quant/kernels.h"

namespace lamina::bench {
namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

std::string gib(uint64_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return s.str();
}

std::string mib(uint64_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

// Peak resident memory beyond the model file and the KV cache, as a share of the two.
std::string memory_overhead(const BenchRun& run) {
  const uint64_t base = run.model.file_bytes + run.kv_cache_bytes;
  const double over = static_cast<double>(run.peak_rss_bytes) - static_cast<double>(base);
  std::ostringstream s;
  s << std::showpos << std::fixed << std::setprecision(1) << over / (1024.0 * 1024.0) << " MiB ("
    << 100.0 * over / static_cast<double>(base) << "%) over file + KV cache";
  return s.str();
}

std::string millions(uint64_t n) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(n) / 1e6 << " M";
  return s.str();
}

}  // namespace

void print_results(std::ostream& out, const std::string& format, const BenchOptions& options, const BenchRun& run) {
  const std::string target(quant::kernel_target_name());
  if (format == "json") {
    nlohmann::json doc;
    doc["build"] = {{"version", LAMINA_VERSION}, {"compiler", compiler()}, {"simd_target", target}};
    doc["cpu"] = cpu_name();
    doc["model"] = {{"path", run.model.path},         {"arch", run.model.arch},   {"types", run.model.type_mix},
                    {"file_bytes", run.model.file_bytes}, {"params", run.model.params}};
    doc["load_ms"] = run.load_ms;
    doc["load_cpu_ms"] = run.load_cpu_ms;
    doc["peak_rss_bytes"] = run.peak_rss_bytes;
    doc["kv_cache_bytes"] = run.kv_cache_bytes;
    doc["backend"] = run.backend;
    doc["first_token_ms"] = run.first_token_ms;
    doc["first_token_cpu_ms"] = run.first_token_cpu_ms;
    if (!run.device_memory.empty()) doc["device_memory"] = run.device_memory;
    doc["kv_type"] = options.run.kv_type;
    doc["batch_size"] = options.run.batch_size;
    nlohmann::json results = nlohmann::json::array();
    for (const auto& r : run.results)
      results.push_back({{"test", r.test},
                         {"threads", r.threads},
                         {"n_tokens", r.n_tokens},
                         {"tokens_per_s_mean", r.mean_tps()},
                         {"tokens_per_s_stddev", r.stddev_tps()},
                         {"seconds", r.seconds}});
    doc["results"] = std::move(results);
    out << doc.dump(2) << '\n';
    return;
  }
  if (format == "csv") {
    out << "model,arch,types,file_bytes,params,threads,test,tokens_per_s_mean,tokens_per_s_stddev\n";
    for (const auto& r : run.results)
      out << run.model.path << ',' << run.model.arch << ',' << run.model.type_mix << ',' << run.model.file_bytes << ','
          << run.model.params << ',' << r.threads << ',' << r.test << ',' << r.mean_tps() << ',' << r.stddev_tps()
          << '\n';
    return;
  }
  out << "| model | size | params | backend | threads | test | t/s |\n";
  out << "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& r : run.results) {
    std::ostringstream tps;
    tps << std::fixed << std::setprecision(2) << r.mean_tps() << " ± " << r.stddev_tps();
    out << "| " << run.model.arch << ' ' << run.model.type_mix << " | " << gib(run.model.file_bytes) << " | "
        << millions(run.model.params) << " | " << run.backend << " | " << r.threads << " | " << r.test << " | "
        << tps.str() << " |\n";
  }
  out << "\nbuild: lamina " << LAMINA_VERSION << ", " << compiler() << ", SIMD target " << target << "\n";
  out << "cpu: " << cpu_name() << "\n";
  out << "load: " << std::fixed << std::setprecision(1) << run.load_ms << " ms (CPU " << run.load_cpu_ms
      << " ms), time to first token " << run.first_token_ms << " ms (CPU " << run.first_token_cpu_ms << " ms)\n";
  out << "memory: peak RSS " << mib(run.peak_rss_bytes) << ", file " << mib(run.model.file_bytes) << ", KV cache "
      << mib(run.kv_cache_bytes) << " (" << options.run.kv_type << "), " << memory_overhead(run) << "\n";
  if (!run.device_memory.empty()) out << run.device_memory << "\n";
}

}  // namespace lamina::bench
