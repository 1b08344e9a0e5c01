#include "runtime/core/env_switch.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace onnx_amp {

bool EnvSwitchOn(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return true;
  const std::string_view text(value);
  if (text.empty() || text == "1") return true;
  if (text == "0") return false;
  std::fprintf(stderr, "onnx-amp: %s='%s' is not 0 or 1; using 1\n", name, value);
  return true;
}

}  // namespace onnx_amp
