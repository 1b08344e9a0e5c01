// The execution plan of one graph (and, nested, of its If/Loop/Scan bodies): nodes in
// topological order with their kernels, every value mapped to a slot of a frame, and
// for each node the slots whose last use it is, so their buffers can be reused. A Relu,
// LeakyRelu or Clip that alone reads the output of a Conv/Gemm/MatMul/BatchNormalization
// is folded into that step (its kernel applies the activation), and so are a Cast to
// float32 of a Gemm/MatMul's float16 or bfloat16 output and a ReluGrad of a
// MaxPoolGrad's output (plan_fusion.h), unless the value between them must stay
// observable; before those, an inference BatchNormalization after a Conv is folded into
// the Conv's weights and a residual Add into the Conv (plan_rewrites.h). Last, values
// passed between CPU convolutions and max pools are stored channels-last
// (plan_layouts.h); then a training BatchNormalization of such a value hands its batch
// statistics to its gradient through two slots of its own (plan_rewrites.h), a first
// layer's 2x2 max pool folds into its Conv, a float32 Conv's Relu that only a max pool
// reads moves into the pool, and a ReduceSum over the leading axes of an activation
// gradient's dX (a bias gradient) folds into that gradient (plan_fusion.h).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx { class NodeProto; }

namespace onnx_amp {

class GraphView;
class KernelRegistry;
struct GraphPlan;

enum class SlotKind {
  kGraphInput,   // fed by the caller (main graph) or by the control-flow kernel (bodies)
  kInitializer,  // a constant decoded once when the plan is built
  kNodeOutput,   // produced by a step; the only kind whose buffers the pool recycles
  kOuterScope,   // read from an enclosing graph's frame
};

struct PlanStep {
  const onnx::NodeProto* node = nullptr;  // for a copy step: the node it feeds
  const KernelDef* kernel = nullptr;
  DeviceKind device = DeviceKind::kCpu;  // where the step runs and its outputs live
  int opset = 0;
  std::string op_label;         // the op type, or "Conv+Relu" for a fused step
  FusedActivation activation;   // folded in from the node that read output 0
  int addend_input = -1;        // input added to output 0 before the activation (Conv+Add)
  int bias_input = -1;          // row added to output 0's rows before the activation (MatMul+Add)
  // A Cast to float32 folded in (plan_fusion.h): output 0 is stored as float32.
  bool widened_output = false;
  // A ReluGrad folded in (plan_fusion.h): output 0 is multiplied by the Relu's slope.
  bool relu_grad = false;
  // A Relu moved here from input 0's producer (plan_fusion.h): input 0 is read through it.
  bool relu_input = false;
  // A 2x2 stride-2 MaxPool folded in (plan_fusion.h): output 0 is the pool's output.
  bool pooled_output = false;
  // A ReduceSum over output 0's first n axes folded in (plan_fusion.h): output 1 holds it.
  int summed_leading_axes = 0;
  // The kernel's state across runs (prepacked weights); a cache, hence mutable.
  mutable std::unique_ptr<KernelState> state;
  std::vector<int> inputs;            // slot per node input, -1 for an absent one
  std::vector<int> outputs;           // slot per node output, -1 for an omitted one
  std::vector<bool> outputs_used;     // read by a later step, a body, or the graph's outputs
  std::vector<int> release_after;     // slots whose value dies once this step is done
  std::vector<std::pair<std::string, const GraphPlan*>> subgraphs;  // by attribute name
};

struct GraphPlan {
  const GraphView* view = nullptr;
  std::vector<std::string> slot_names;
  std::vector<SlotKind> slot_kinds;
  std::unordered_map<std::string, int> slot_of;
  std::vector<int> input_slots;   // graph inputs in declaration order
  std::vector<int> output_slots;  // graph outputs in declaration order
  std::vector<int> outer_slots;   // filled from the enclosing frame when a frame starts
  std::vector<std::pair<int, Tensor>> initializers;
  // Where each slot's value lives (device_placement.h); a graph input's feed is moved there.
  std::vector<DeviceKind> slot_devices;
  // (host slot, device slot): initializers device steps read, copied once at load.
  std::vector<std::pair<int, int>> device_initializers;
  std::vector<PlanStep> steps;
  std::vector<std::unique_ptr<GraphPlan>> bodies;  // owned plans of the steps' subgraphs
  // Per slot: its [N, C, H, W] values are stored channels-last (plan_layouts.h); empty
  // when no slot is.
  std::vector<bool> channels_last;

  // Slot of `name` in this graph, or -1.
  int FindSlot(const std::string& name) const {
    auto it = slot_of.find(name);
    return it == slot_of.end() ? -1 : it->second;
  }
};

struct PlanOptions {
  // The device's kernels when the plan targets a device: each node takes the device's
  // kernel when there is one for its op and dtype, the CPU's otherwise; copy steps join
  // the two sides (device_placement.h). Bodies of If/Loop/Scan run on the CPU.
  const KernelRegistry* device_kernels = nullptr;
  bool fuse_activations = true;
  // With fuse_activations, keep the values passed between CPU convolutions and max pools
  // in channels-last order (plan_layouts.h) instead of reordering them around each one.
  bool channels_last = true;
  // With channels_last, hand training BatchNormalization statistics to the gradient
  // (plan_rewrites.h, ShareBatchStatistics).
  bool share_batch_statistics = true;
  // Values of the main graph that must keep their own tensor (captured ones): the
  // activation that reads such a value is never folded away from it.
  bool keep_all_values = false;
  std::vector<std::string> keep_values;
};

// Builds the plan for `view` and its bodies with the CPU kernels of `registry` and, for
// a `device` other than the CPU, options.device_kernels. Every node without a kernel is
// collected first; the error lists all of them (name, op type, domain) at once.
Expected<std::unique_ptr<GraphPlan>> BuildGraphPlan(const GraphView& view, const KernelRegistry& registry,
                                                    DeviceKind device, const PlanOptions& options = {});

}  // namespace onnx_amp
