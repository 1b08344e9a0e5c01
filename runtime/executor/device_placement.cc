#include "runtime/executor/device_placement.h"

#include <map>
#include <string>
#include <utility>

#include "runtime/exec/device.h"

namespace onnx_amp {
namespace {

Expected<const Tensor*> CopySource(const KernelContext& context) {
  const Tensor* input = context.input(0);
  if (input == nullptr) return context.Error(ErrorCode::kInternal, "a copy step without its value");
  if (context.device_context() == nullptr) return context.Error(ErrorCode::kInternal, "a copy step without a device");
  return input;
}

Status CopyToDevice(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, CopySource(context));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, input->dtype(), input->shape()));
  return context.device_context()->CopyFromHost(out->raw_data(), input->raw_data(), input->bytes());
}

Status CopyToHost(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, CopySource(context));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, input->dtype(), input->shape()));
  return context.device_context()->CopyToHost(out->raw_data(), input->raw_data(), input->bytes());
}

bool HasBit(uint32_t bits, size_t index) { return index < 32 && (bits >> index) & 1u; }

class Placer {
 public:
  Placer(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads) : plan_(plan), outer_reads_(outer_reads) {}

  void Run() {
    const size_t slots = plan_.slot_names.size();
    plan_.slot_devices.assign(slots, DeviceKind::kCpu);
    HomeGraphInputs();
    for (const PlanStep& step : plan_.steps) {
      for (int slot : step.outputs) {
        if (slot >= 0) plan_.slot_devices[slot] = step.device;
      }
    }
    std::vector<PlanStep> placed;
    std::vector<std::vector<int>> placed_reads;
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      PlanStep& step = plan_.steps[s];
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        const int slot = step.inputs[i];
        if (slot < 0 || HasBit(step.kernel->metadata_inputs, i)) continue;
        step.inputs[i] = Reachable(slot, Wanted(step, i), step, placed, placed_reads);
      }
      // Bodies run on the CPU and find outer values by name: the name now means the
      // host copy.
      for (int& slot : outer_reads_[s]) {
        if (plan_.slot_devices[slot] == DeviceKind::kCpu) continue;
        const std::string name = plan_.slot_names[slot];
        slot = Reachable(slot, DeviceKind::kCpu, step, placed, placed_reads);
        plan_.slot_of[name] = slot;
      }
      placed.push_back(std::move(step));
      placed_reads.push_back(std::move(outer_reads_[s]));
    }
    plan_.steps = std::move(placed);
    outer_reads_ = std::move(placed_reads);
  }

 private:
  DeviceKind Wanted(const PlanStep& step, size_t input) const {
    return step.device != DeviceKind::kCpu && !HasBit(step.kernel->host_inputs, input) ? step.device : DeviceKind::kCpu;
  }

  // A graph input lives where its first reader wants it (the executor moves the feed there).
  void HomeGraphInputs() {
    for (int slot : plan_.input_slots) {
      for (const PlanStep& step : plan_.steps) {
        bool found = false;
        for (size_t i = 0; i < step.inputs.size() && !found; ++i) {
          if (step.inputs[i] != slot || HasBit(step.kernel->metadata_inputs, i)) continue;
          plan_.slot_devices[slot] = Wanted(step, i);
          found = true;
        }
        if (found) break;
      }
    }
  }

  // The slot holding `slot`'s value on `where`: itself, an earlier copy, or a new copy
  // (an initializer copy made once at load, or a copy step appended to `placed`).
  int Reachable(int slot, DeviceKind where, const PlanStep& reader, std::vector<PlanStep>& placed,
                std::vector<std::vector<int>>& placed_reads) {
    if (plan_.slot_devices[slot] == where) return slot;
    const auto key = std::make_pair(slot, where);
    auto it = copies_.find(key);
    if (it != copies_.end()) return it->second;
    const std::string name = plan_.slot_names[slot] + (where == DeviceKind::kCpu ? "@host" : "@device");
    const bool constant = plan_.slot_kinds[slot] == SlotKind::kInitializer;
    const int copy = static_cast<int>(plan_.slot_names.size());
    plan_.slot_names.push_back(name);
    plan_.slot_kinds.push_back(constant ? SlotKind::kInitializer : SlotKind::kNodeOutput);
    plan_.slot_devices.push_back(where);
    if (constant) {
      plan_.device_initializers.emplace_back(slot, copy);
    } else {
      PlanStep step;
      step.node = reader.node;
      step.opset = reader.opset;
      step.device = where;
      step.kernel = where == DeviceKind::kCpu ? &CopyToHostKernelDef() : &CopyToDeviceKernelDef();
      step.op_label = where == DeviceKind::kCpu ? "CopyToHost" : "CopyToDevice";
      step.inputs = {slot};
      step.outputs = {copy};
      placed.push_back(std::move(step));
      placed_reads.emplace_back();
    }
    copies_.emplace(key, copy);
    return copy;
  }

  GraphPlan& plan_;
  std::vector<std::vector<int>>& outer_reads_;
  std::map<std::pair<int, DeviceKind>, int> copies_;
};

}  // namespace

const KernelDef& CopyToDeviceKernelDef() {
  static const KernelDef def{"", "CopyToDevice", DeviceKind::kCuda, CopyToDevice};
  return def;
}

const KernelDef& CopyToHostKernelDef() {
  static const KernelDef def{"", "CopyToHost", DeviceKind::kCpu, CopyToHost};
  return def;
}

void PlaceValues(GraphPlan& plan, std::vector<std::vector<int>>& outer_reads, DeviceKind device) {
  if (device == DeviceKind::kCpu) {
    plan.slot_devices.assign(plan.slot_names.size(), DeviceKind::kCpu);
    return;
  }
  Placer(plan, outer_reads).Run();
}

}  // namespace onnx_amp
