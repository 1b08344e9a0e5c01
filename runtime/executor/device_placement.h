// Device placement of an execution plan: after each node has its kernel (the device's
// when it has one for the node's op and dtype, the CPU's otherwise), every value gets a
// home (the device of the step that makes it; a graph input where its first readers
// want it; an initializer on the host), and a read from the other side goes through an
// explicit copy step (CopyToDevice, CopyToHost) inserted before the first such reader
// and shared by the later ones. Initializers a device step reads are copied to the
// device once, when the executor is created, not per run. Inputs a device kernel reads
// on the host (KernelDef::host_inputs) and inputs only its shape is read of
// (metadata_inputs) are taken where they are.
#pragma once

#include <vector>

#include "runtime/executor/execution_plan.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// The copy kernels; they reach the device through KernelContext::device_context().
const KernelDef& CopyToDeviceKernelDef();
const KernelDef& CopyToHostKernelDef();

// Inserts the copy steps into `plan` (its steps already carry their device) and fills
// plan.slot_devices and plan.device_initializers. `outer_reads` (per step, the values
// its bodies read by name, which run on the CPU) is kept parallel to the steps.
void PlaceValues(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, DeviceKind device);

}  // namespace onnx_amp
