// The conversion passes in the order they run on a painted plan (pass_list.cc says why).
#pragma once

#include <span>
#include <string_view>

#include "converter/passes/pass_context.h"

namespace onnx_amp {

struct NamedPass {
  std::string_view name;
  Pass run;
};

// Every pass of converter/passes/, in order.
std::span<const NamedPass> ConversionPasses();

// Runs ConversionPasses() in order on `context`, stopping at the first error.
Status RunConversionPasses(PassContext& context);

}  // namespace onnx_amp
