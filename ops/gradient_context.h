// GradientContext: what one gradient rule sees while it writes the backward nodes of
// one forward node. It names the forward values (I/O), the incoming output gradients
// (GO) and the input gradients to produce (GI), answers element types and static
// shapes from the ModelView, and emits new nodes with fresh names prefixed by
// "<forward node>_grad". Helpers cover what many rules share: opset-dependent
// ReduceSum/Unsqueeze/Squeeze, constants, undoing broadcasting, and the error that names
// the opset an emitted form needs.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/graph/graph_view.h"

namespace onnx_amp {

// Attribute constructors for emitted nodes.
onnx::AttributeProto MakeAttribute(const std::string& name, int64_t value);
onnx::AttributeProto MakeAttribute(const std::string& name, float value);
onnx::AttributeProto MakeAttribute(const std::string& name, const std::string& value);
onnx::AttributeProto MakeAttribute(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto MakeAttribute(const std::string& name, const onnx::TensorProto& value);

using Attributes = std::vector<onnx::AttributeProto>;

// How to get a model to `opset`: the end of every "needs opset >= N" error.
std::string UpgradeOpsetHint(int64_t opset);

// Fresh value and node names, unique across the whole graph being built.
class NameTable {
 public:
  // Reserves a name that already exists; false when it was taken.
  bool Reserve(const std::string& name) { return names_.insert(name).second; }
  bool Contains(const std::string& name) const { return names_.count(name) != 0; }
  // `base` itself when free, else base + "_" + n for the first free n.
  std::string Fresh(const std::string& base);

 private:
  std::set<std::string> names_;
};

class GradientContext {
 public:
  // `forward_node` is the node of the graph being built (a rule may add an optional
  // output to it); `view` indexes the unchanged forward graph for types and shapes.
  GradientContext(onnx::NodeProto& forward_node, const GraphView& view, int64_t opset, int64_t default_opset,
                  std::vector<std::string> output_grads, std::vector<bool> needs_input_grad,
                  std::vector<std::string> input_grad_names, NameTable& names,
                  std::vector<onnx::NodeProto>& emitted, std::set<std::string>& used_domains);

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  // Opset of the forward node's domain; default_opset() is the one emitted ONNX ops follow.
  int64_t opset() const { return opset_; }
  int64_t default_opset() const { return default_opset_; }

  int num_inputs() const { return node_.input_size(); }
  int num_outputs() const { return node_.output_size(); }
  // Forward input / output names; "" when absent.
  const std::string& I(int index) const;
  const std::string& O(int index) const;
  bool HasInput(int index) const { return !I(index).empty(); }

  // Name of the gradient of output `index`; "" when no gradient flows into it.
  const std::string& GO(int index) const;
  bool HasGO(int index) const { return !GO(index).empty(); }
  // Whether input `index` needs a gradient, and the name to write it to.
  bool NeedsGI(int index) const;
  const std::string& GI(int index) const;

  // Returns output `index` of the forward node, adding it (with a fresh name) when the
  // node omits it (SoftmaxCrossEntropyLoss log_prob, LayerNormalization statistics).
  std::string EnsureOutput(int index);

  // Element type and shape of a forward value (known from the ModelView).
  DType ValueType(const std::string& name) const;
  // The fully static shape, or nullopt when the rank or any dim is unknown.
  std::optional<Shape> StaticShape(const std::string& name) const;
  // The shape as far as it is known: -1 for an unknown dim, with its symbolic name when
  // it has one; nullopt when the rank is unknown.
  std::optional<ValueShape> KnownShape(const std::string& name) const;
  std::optional<int64_t> Rank(const std::string& name) const;
  // Values of a constant int64/int32 tensor (initializer or Constant node output).
  std::optional<std::vector<int64_t>> ConstantInts(const std::string& name) const;

  // Attribute access with ONNX defaults given by the caller.
  const onnx::AttributeProto* Attr(std::string_view name) const;
  int64_t AttrInt(std::string_view name, int64_t fallback) const;
  float AttrFloat(std::string_view name, float fallback) const;
  std::string AttrString(std::string_view name, std::string_view fallback) const;
  std::vector<int64_t> AttrInts(std::string_view name) const;
  // Copies of the forward attributes with the given names, where present.
  Attributes CopyAttributes(const std::vector<std::string>& names) const;

  // --- emission ---
  std::string NewValue(const std::string& hint);
  void Emit(const std::string& op_type, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, Attributes attributes = {}, std::string_view domain = "");
  // Emits a one-output node and returns the output's fresh name.
  std::string EmitValue(const std::string& op_type, const std::vector<std::string>& inputs,
                        Attributes attributes = {}, std::string_view domain = "");

  std::string ConstInts(const std::vector<int64_t>& values);
  // A rank-0 constant of a floating dtype.
  std::string ConstScalar(double value, DType dtype);
  std::string ShapeOf(const std::string& value);
  std::string CastTo(const std::string& value, DType dtype);

  // Opset-correct forms: axes as attribute or as input.
  std::string ReduceSum(const std::string& value, const std::vector<int64_t>& axes, bool keepdims);
  std::string Unsqueeze(const std::string& value, const std::vector<int64_t>& axes);
  std::string Squeeze(const std::string& value, const std::vector<int64_t>& axes);
  std::string ReshapeLike(const std::string& value, const std::string& like);

  // Undoes broadcasting: `grad` is the gradient of a value of rank `grad_rank` (shape
  // `grad_shape` as far as known) that `input` was broadcast to. Emits ReduceSum over
  // the broadcast axes (keepdims=1) and a Reshape to the input's shape into `result`:
  // when the known dims tell the axes (dims equal by value or by symbolic name) they
  // are computed here, in a form valid at every opset; otherwise from Shape at run time
  // (opset >= 13).
  Status Unbroadcast(const std::string& grad, const std::optional<ValueShape>& grad_shape, int64_t grad_rank,
                     const std::string& input, const std::string& result);
  // The usual case: `grad` has the shape of forward value `like` (an output).
  Status UnbroadcastLike(const std::string& grad, const std::string& like, const std::string& input,
                         const std::string& result);

  Status Error(ErrorCode code, const std::string& message) const;
  // Ok when the emitted ops follow opset `minimum` or later; otherwise Unsupported naming
  // this node, what needs that opset (`what`, e.g. "ScatterElements with reduction add")
  // and the fix (UpgradeOpsetHint).
  Status NeedsOpset(int64_t minimum, std::string_view what) const;

 private:
  onnx::NodeProto& node_;
  const GraphView& view_;
  int64_t opset_;
  int64_t default_opset_;
  std::vector<std::string> output_grads_;
  std::vector<bool> needs_input_grad_;
  std::vector<std::string> input_grad_names_;
  NameTable& names_;
  std::vector<onnx::NodeProto>& emitted_;
  std::set<std::string>& used_domains_;
  std::string prefix_;
};

}  // namespace onnx_amp
