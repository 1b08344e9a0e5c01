#include "tools/onnx-amp/command.h"

#include <utility>

namespace onnx_amp {

void CommandRunner::Bind(CLI::App& command, Action action) {
  command.callback([this, action = std::move(action)] { action_ = action; });
}

}  // namespace onnx_amp
