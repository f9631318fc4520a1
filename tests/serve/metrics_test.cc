// The Prometheus text format of /metrics.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "metrics.h"

namespace lamina::serve {
namespace {

bool is_metric_name(std::string_view s) {
  if (s.empty() || !(std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_' || s[0] == ':')) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
          c == ':'))
      return false;
  return true;
}

// `name` or `name{label="value",...}` with lower-case label names.
bool is_series(std::string_view s) {
  const std::size_t brace = s.find('{');
  if (brace == std::string_view::npos) return is_metric_name(s);
  if (!is_metric_name(s.substr(0, brace)) || s.back() != '}') return false;
  std::string_view labels = s.substr(brace + 1, s.size() - brace - 2);
  while (true) {
    const std::size_t eq = labels.find("=\"");
    if (eq == std::string_view::npos || eq == 0) return false;
    for (char c : labels.substr(0, eq))
      if (!(std::islower(static_cast<unsigned char>(c)) || c == '_')) return false;
    const std::size_t close = labels.find('"', eq + 2);
    if (close == std::string_view::npos) return false;
    labels.remove_prefix(close + 1);
    if (labels.empty()) return true;
    if (labels[0] != ',') return false;
    labels.remove_prefix(1);
  }
}

// `# HELP name text` or `# TYPE name counter|gauge|histogram`.
bool is_comment(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string hash, kind, name, rest;
  in >> hash >> kind >> name;
  std::getline(in >> std::ws, rest);
  if (hash != "#" || !is_metric_name(name)) return false;
  if (kind == "HELP") return !rest.empty();
  return kind == "TYPE" && (rest == "counter" || rest == "gauge" || rest == "histogram");
}

// Sample lines by series (name with labels) -> value; comment lines checked for form.
std::map<std::string, std::string> samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      EXPECT_TRUE(is_comment(line)) << line;
      continue;
    }
    const std::size_t space = line.rfind(' ');
    const std::string series = space == std::string::npos ? std::string() : line.substr(0, space);
    const std::string value = space == std::string::npos ? std::string() : line.substr(space + 1);
    if (is_series(series) && !value.empty()) {
      EXPECT_TRUE(out.emplace(series, value).second) << "duplicate series " << line;
    } else {
      ADD_FAILURE() << "not a sample line: '" << line << "'";
    }
  }
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  return out;
}

TEST(Metrics, NumbersInPrometheusForm) {
  EXPECT_EQ(prometheus_number(3), "3");
  EXPECT_EQ(prometheus_number(0.005), "0.005");
  EXPECT_EQ(prometheus_number(2.5), "2.5");
  EXPECT_EQ(prometheus_number(1.0 / 0.0), "+Inf");
  EXPECT_EQ(prometheus_number(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(prometheus_number(std::nan("")), "NaN");
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 2.0, 3.0}) h.observe(v);
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 5}));  // le=0.1 includes 0.1 itself
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.sum, 5.65);
}

TEST(Metrics, RenderedTextParsesAndCarriesTheCounts) {
  Metrics m;
  m.count_http("/v1/chat/completions", 200);
  m.count_http("/v1/chat/completions", 200);
  m.count_http("other", 404);
  model::CompletionResult r;
  r.prompt_tokens = 7;
  r.cached_prompt_tokens = 3;
  r.generated_ids = {1, 2, 3, 4};
  r.queue_ms = 20;
  m.count_completion("chat_completions", "stop", r, 0.3);
  m.count_rejected();
  m.observe_time_to_first_token(0.02);
  m.observe_inter_token_latency(0.004);
  m.observe_inter_token_latency(0.006);
  LiveGauges live;
  live.engine.queue_depth = 2;
  live.engine.active_sequences = 3;
  live.engine.n_slots = 4;
  live.engine.kv_tokens_used = 256;
  live.engine.kv_tokens_capacity = 1024;
  live.engine.kv_blocks_total = 8;
  live.engine.kv_blocks_in_use = 3;
  live.engine.kv_blocks_cached = 2;
  live.engine.kv_blocks_peak = 5;
  live.engine.prompt_tokens_total = 400;
  live.engine.cached_prompt_tokens_total = 100;
  live.engine.last_step_tokens = 17;
  live.http_in_flight = 5;

  const auto s = samples(m.render(live));
  EXPECT_EQ(s.at(R"(lamina_http_requests_total{route="/v1/chat/completions",status="200"})"), "2");
  EXPECT_EQ(s.at(R"(lamina_http_requests_total{route="other",status="404"})"), "1");
  EXPECT_EQ(s.at(R"(lamina_completion_requests_total{endpoint="chat_completions",finish_reason="stop"})"), "1");
  EXPECT_EQ(s.at("lamina_rejected_requests_total"), "1");
  EXPECT_EQ(s.at("lamina_prompt_tokens_total"), "7");
  EXPECT_EQ(s.at("lamina_prompt_cached_tokens_total"), "3");
  EXPECT_EQ(s.at("lamina_generated_tokens_total"), "4");
  EXPECT_EQ(s.at(R"(lamina_time_to_first_token_seconds_bucket{le="0.025"})"), "1");
  EXPECT_EQ(s.at(R"(lamina_time_to_first_token_seconds_bucket{le="0.01"})"), "0");
  EXPECT_EQ(s.at(R"(lamina_time_to_first_token_seconds_bucket{le="+Inf"})"), "1");
  EXPECT_EQ(s.at("lamina_time_to_first_token_seconds_count"), "1");
  EXPECT_EQ(s.at(R"(lamina_inter_token_latency_seconds_bucket{le="0.005"})"), "1");
  EXPECT_EQ(s.at(R"(lamina_inter_token_latency_seconds_bucket{le="0.01"})"), "2");
  EXPECT_EQ(s.at("lamina_inter_token_latency_seconds_count"), "2");
  EXPECT_EQ(s.at("lamina_inter_token_latency_seconds_sum"), "0.01");
  EXPECT_EQ(s.at(R"(lamina_queue_wait_seconds_bucket{le="0.05"})"), "1");
  EXPECT_EQ(s.at("lamina_request_duration_seconds_count"), "1");
  EXPECT_EQ(s.at("lamina_queue_depth"), "2");
  EXPECT_EQ(s.at("lamina_active_sequences"), "3");
  EXPECT_EQ(s.at("lamina_sequence_slots"), "4");
  EXPECT_EQ(s.at("lamina_batch_tokens"), "17");
  EXPECT_EQ(s.at("lamina_kv_cache_used_tokens"), "256");
  EXPECT_EQ(s.at("lamina_kv_cache_capacity_tokens"), "1024");
  EXPECT_EQ(s.at("lamina_kv_cache_usage_ratio"), "0.25");
  EXPECT_EQ(s.at("lamina_kv_blocks"), "8");
  EXPECT_EQ(s.at("lamina_kv_blocks_in_use"), "3");
  EXPECT_EQ(s.at("lamina_kv_blocks_cached"), "2");
  EXPECT_EQ(s.at("lamina_kv_blocks_peak"), "5");
  EXPECT_EQ(s.at("lamina_prefix_cache_hit_ratio"), "0.25");
  EXPECT_EQ(s.at("lamina_http_requests_in_flight"), "5");
}

TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m;
  m.count_completion("a\"b\\c\nd", "stop", model::CompletionResult{}, 0.0);
  const std::string text = m.render(LiveGauges{});
  EXPECT_NE(text.find(R"(endpoint="a\"b\\c\nd")"), std::string::npos) << text;
}

}  // namespace
}  // namespace lamina::serve
