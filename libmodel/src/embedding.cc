#include "lamina/model/embedding.h"

#include <cmath>
#include <string>

#include "lamina/model/config.h"

namespace lamina::model {

std::optional<Pooling> pooling_of(const Model& model) {
  const gguf::GgufFile& file = model.file();
  const std::string key = file.get_string("general.architecture") + ".pooling_type";
  if (!file.contains(key)) return std::nullopt;
  uint32_t value = 0;
  try {
    value = file.get_u32(key);
  } catch (const std::exception& e) {
    throw ModelError("metadata key '" + key + "': " + e.what());
  }
  switch (value) {
    case 0: return std::nullopt;
    case 1: return Pooling::Mean;
    case 2: return Pooling::First;
    case 3: return Pooling::Last;
    default:
      throw ModelError("metadata key '" + key + "' is " + std::to_string(value) +
                       ": only pooling 0 (none), 1 (mean), 2 (cls) and 3 (last) are supported");
  }
}

std::string pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::Last: return "last";
    case Pooling::Mean: return "mean";
    case Pooling::First: return "first";
  }
  return "?";
}

std::optional<Pooling> pooling_by_name(const std::string& name) {
  for (const Pooling p : {Pooling::Last, Pooling::Mean, Pooling::First})
    if (pooling_name(p) == name) return p;
  return std::nullopt;
}

bool pooling_reads(Pooling pooling, uint32_t pos, uint32_t n_tokens) {
  switch (pooling) {
    case Pooling::Last: return pos + 1 == n_tokens;
    case Pooling::Mean: return pos < n_tokens;
    case Pooling::First: return pos == 0;
  }
  return false;
}

std::vector<float> pool_and_normalize(Pooling pooling, std::span<const float> states, std::size_t width) {
  if (width == 0 || states.size() % width != 0 || states.empty())
    throw ModelError("pooling: " + std::to_string(states.size()) + " values are not rows of " + std::to_string(width));
  const std::size_t n_rows = states.size() / width;
  std::vector<double> sum(width, 0.0);
  for (std::size_t r = 0; r < n_rows; ++r)
    for (std::size_t i = 0; i < width; ++i) sum[i] += states[r * width + i];
  if (pooling == Pooling::Mean)
    for (double& v : sum) v /= static_cast<double>(n_rows);
  double norm2 = 0.0;
  for (const double v : sum) norm2 += v * v;
  const double scale = norm2 > 0.0 ? 1.0 / std::sqrt(norm2) : 0.0;
  std::vector<float> out(width);
  for (std::size_t i = 0; i < width; ++i) out[i] = static_cast<float>(sum[i] * scale);
  return out;
}

}  // namespace lamina::model
