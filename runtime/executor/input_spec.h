// What a model's graph inputs declare (element type, rank, static or symbolic dims),
// and the check of a set of fed tensors against it before any node runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx { class GraphProto; }

namespace onnx_amp {

struct InputSpec {
  std::string name;
  DType dtype = DType::kUndefined;
  bool has_shape = false;              // false: any rank
  std::vector<int64_t> dims;           // -1 where the dim is symbolic or unknown
  std::vector<std::string> dim_params; // the symbolic name, "" if none
  bool has_default = false;            // an initializer backs it; feeding it is optional
};

// Graph inputs in declaration order. Unsupported for non-tensor inputs (sequences, maps,
// optionals) and element types the runtime does not know.
Expected<std::vector<InputSpec>> GraphInputSpecs(const onnx::GraphProto& graph);

// Checks that every input without a default is fed, that no unknown name is fed, and
// that dtype, rank and static dims match; a symbolic dim must take one value across
// all inputs. Errors name the input.
Status CheckInputs(const std::vector<InputSpec>& specs, const std::map<std::string, Tensor>& feeds);

// "float16[batch,3,224,224]"
std::string InputSpecToString(const InputSpec& spec);

}  // namespace onnx_amp
