// On/off switches read from the environment (ONNX_AMP_HUGE_PAGES, ONNX_AMP_CONV_WINOGRAD):
// the default is on, and a value that is neither on nor off is named on stderr rather
// than taken silently.
#pragma once

namespace onnx_amp {

// Whether the switch `name` is on: unset, empty or "1" is on, "0" is off; anything else
// is reported ("onnx-amp: NAME='VALUE' is not 0 or 1; using 1") and taken as on.
bool EnvSwitchOn(const char* name);

}  // namespace onnx_amp
