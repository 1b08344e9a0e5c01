#include "ops/conv/conv_key.h"

#include <functional>
#include <tuple>

namespace onnx_amp {
namespace {

auto Fields(const ConvKey& k) {
  return std::tie(k.direction, k.dtype, k.x_dims, k.w_dims, k.y_dims, k.pads_begin, k.pads_end, k.strides,
                  k.dilations, k.tf32, k.alignment);
}

void Mix(size_t& seed, size_t value) { seed ^= value + 0x9E3779B97F4A7C15ull + (seed << 6) + (seed >> 2); }

std::string Join(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

}  // namespace

bool ConvKey::operator==(const ConvKey& other) const { return Fields(*this) == Fields(other); }

std::string ConvKey::ToString() const {
  const char* names[] = {"forward", "backward-data", "backward-filter"};
  return std::string(names[static_cast<int>(direction)]) + " " + std::string(DTypeName(dtype)) + " x" + Join(x_dims) +
         " w" + Join(w_dims) + " y" + Join(y_dims) + " pads" + Join(pads_begin) + Join(pads_end) + " strides" +
         Join(strides) + " dilations" + Join(dilations) + (tf32 ? " tf32" : "") + " align " + std::to_string(alignment);
}

size_t ConvKeyHash::operator()(const ConvKey& key) const {
  size_t seed = std::hash<int>{}(static_cast<int>(key.direction) * 64 + static_cast<int>(key.dtype));
  for (const std::vector<int64_t>* list :
       {&key.x_dims, &key.w_dims, &key.y_dims, &key.pads_begin, &key.pads_end, &key.strides, &key.dilations}) {
    Mix(seed, list->size());
    for (int64_t value : *list) Mix(seed, std::hash<int64_t>{}(value));
  }
  Mix(seed, static_cast<size_t>(key.tf32) * 32 + static_cast<size_t>(key.alignment));
  return seed;
}

}  // namespace onnx_amp
