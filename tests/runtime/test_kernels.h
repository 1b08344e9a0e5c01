// Kernels in a "test" domain that let executor tests control in-place reuse and count
// calls independently of the real op families.
#pragma once

#include <atomic>

#include "ops/kernel_registry.h"

namespace onnx_amp::testing {

// Calls of every test kernel since the process started.
extern std::atomic<int> test_kernel_calls;

// test.AddOne (y = x + 1, may run in place), test.AddOneCopy (same, never in place),
// test.AddTest (z = x + y for equal shapes, may run in place), test.Fail (always an error);
// float32 only. Also registers the control-flow kernels.
KernelRegistry MakeTestRegistry();

}  // namespace onnx_amp::testing
