#include "runtime/onnx/inference_guards.h"

#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "runtime/onnx/tensor_walk.h"

namespace onnx_amp {
namespace {

bool IsLabel(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

size_t CountLabels(const std::string& term) {
  size_t labels = 0;
  for (char c : term) labels += IsLabel(c);
  return labels;
}

// What ONNX 1.18's einsumShapeInference assumes before it reads dims by label position.
void CheckEinsumOperands(onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* attr = ctx.getAttribute("equation");
  if (attr == nullptr) return;
  std::string equation;
  for (char c : attr->s()) {
    if (c != ' ') equation += c;
  }
  const size_t arrow = equation.find("->");
  const std::string left = equation.substr(0, arrow);
  std::optional<size_t> ellipsis_dims;
  size_t operand = 0;
  size_t start = 0;
  while (start <= left.size() && operand < ctx.getNumInputs()) {
    const size_t comma = left.find(',', start);
    const std::string term = left.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? left.size() + 1 : comma + 1;
    const onnx::TypeProto* type = ctx.getInputType(operand);
    if (type != nullptr && type->has_tensor_type() && type->tensor_type().has_shape()) {
      const size_t rank = static_cast<size_t>(type->tensor_type().shape().dim_size());
      const size_t labels = CountLabels(term);
      const bool has_ellipsis = term.find("...") != std::string::npos;
      if (has_ellipsis ? rank < labels : rank != labels) {
        fail_shape_inference("Einsum input ", operand, " has rank ", rank, " but its term '", term, "' has ", labels,
                             " labels");
      }
      if (has_ellipsis) {
        if (ellipsis_dims && *ellipsis_dims != rank - labels) {
          fail_shape_inference("Einsum ellipses stand for different numbers of dimensions");
        }
        ellipsis_dims = rank - labels;
      }
    }
    ++operand;
  }
  if (arrow == std::string::npos) return;
  for (char c : equation.substr(arrow + 2)) {
    if (IsLabel(c) && left.find(c) == std::string::npos) {
      fail_shape_inference("Einsum output label '", std::string(1, c), "' is in no input");
    }
  }
}

// What ONNX 1.18's ConvTranspose inference assumes: a weight of rank >= 2 whose spatial
// dims (the kernel, unless kernel_shape gives it) match the input's.
void CheckConvTransposeOperands(onnx::InferenceContext& ctx) {
  if (!onnx::hasNInputShapes(ctx, 2)) return;
  const int input_rank = ctx.getInputType(0)->tensor_type().shape().dim_size();
  const int weight_rank = ctx.getInputType(1)->tensor_type().shape().dim_size();
  if (input_rank < 2) return;  // ONNX gives up on these itself
  if (weight_rank < 2) fail_shape_inference("ConvTranspose weight has rank ", weight_rank, "; it needs at least 2");
  if (ctx.getAttribute("kernel_shape") == nullptr && weight_rank != input_rank) {
    fail_shape_inference("ConvTranspose weight has rank ", weight_rank, " but the input has rank ", input_rank);
  }
}

// What ONNX 1.18's convolution inference assumes when it takes the kernel from the weight
// (no kernel_shape): a weight of the input's rank. A longer one makes it read input dims
// past the end (QLinearConv with a 1-D input and a 2-D kernel; graph_view fuzz target).
template <int kWeightIndex>
void CheckWeightRankMatchesInput(onnx::InferenceContext& ctx) {
  if (ctx.getAttribute("kernel_shape") != nullptr || !onnx::hasInputShape(ctx, 0) ||
      !onnx::hasInputShape(ctx, kWeightIndex)) {
    return;
  }
  const int input_rank = ctx.getInputType(0)->tensor_type().shape().dim_size();
  const int weight_rank = ctx.getInputType(kWeightIndex)->tensor_type().shape().dim_size();
  if (weight_rank != input_rank) {
    fail_shape_inference("the weight has rank ", weight_rank, " but the input has rank ", input_rank);
  }
}

// What ONNX 1.18's convolution and pooling inference assume: strides > 0 (they divide by
// each stride; a zero one stops the process with SIGFPE).
void CheckPositiveStrides(onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* strides = ctx.getAttribute("strides");
  if (strides == nullptr) return;
  for (const int64_t stride : strides->ints()) {
    if (stride <= 0) fail_shape_inference("strides must be positive, got ", stride);
  }
}

// Data propagation follows shape-like integer vectors (Shape -> Slice -> Concat ...). For an
// input it has no value of, ONNX 1.18 makes one unknown entry per element of the input's
// static length: a Range over constants can have 10^16 elements, and a Concat reading it
// then allocates until the process dies. No shape vector is that long, so propagation is
// skipped where an input is longer than this.
constexpr int64_t kLongestShapeValue = 4096;

bool InputsAreShapeSized(onnx::DataPropagationContext& ctx) {
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    const onnx::TypeProto* type = ctx.getInputType(i);
    if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) continue;
    const onnx::TensorShapeProto& shape = type->tensor_type().shape();
    if (shape.dim_size() == 1 && shape.dim(0).has_dim_value() && shape.dim(0).dim_value() > kLongestShapeValue) {
      return false;
    }
  }
  return true;
}

// What ONNX 1.18's Slice data propagation assumes: a Shape value of rank > 0. With an
// empty one and a negative step it clamps start to 0 and end to -1, then reads dim 0.
// Nothing is known about such a slice, so propagation is skipped for it.
bool SliceDataPropagationApplies(onnx::DataPropagationContext& ctx) {
  const onnx::TensorShapeProto* data = ctx.getInputData(0);
  return data == nullptr || data->dim_size() > 0;
}

// Each distinct schema of `op_type` in the default domain, every opset version, as the
// mutable object the registry owns (Schema() only hands out const views).
template <typename Visit>
void ForEachSchema(const char* op_type, Visit visit) {
  const auto& versions = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const int newest = versions.at(onnx::ONNX_DOMAIN).second;
  const onnx::OpSchema* previous = nullptr;
  for (int opset = 1; opset <= newest; ++opset) {
    auto* schema = const_cast<onnx::OpSchema*>(onnx::OpSchemaRegistry::Schema(op_type, opset, ""));
    if (schema == nullptr || schema == previous) continue;
    previous = schema;
    visit(*schema);
  }
}

// Runs `check` before the op's own inference function, in every opset version of the op.
void Guard(const char* op_type, void (*check)(onnx::InferenceContext&)) {
  ForEachSchema(op_type, [check](onnx::OpSchema& schema) {
    if (!schema.has_type_and_shape_inference_function()) return;
    onnx::InferenceFunction original = schema.GetTypeAndShapeInferenceFunction();
    schema.TypeAndShapeInferenceFunction([check, original](onnx::InferenceContext& ctx) {
      check(ctx);
      original(ctx);
    });
  });
}

// Runs the op's data propagation only where `applies` says its assumptions hold.
void GuardDataPropagation(const char* op_type, bool (*applies)(onnx::DataPropagationContext&)) {
  ForEachSchema(op_type, [applies](onnx::OpSchema& schema) {
    if (!schema.has_data_propagation_function()) return;
    onnx::DataPropagationFunction original = schema.GetDataPropagationFunction();
    schema.PartialDataPropagationFunction([applies, original](onnx::DataPropagationContext& ctx) {
      if (applies(ctx)) original(ctx);
    });
  });
}

}  // namespace

Status CheckTensorsForInference(const onnx::ModelProto& model) {
  return ForEachTensor(model, [](const onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (!tensor.has_raw_data()) return Status::Ok();
    size_t element_size = 0;
    switch (tensor.data_type()) {
      case onnx::TensorProto::INT32:
      case onnx::TensorProto::FLOAT: element_size = 4; break;
      case onnx::TensorProto::INT64:
      case onnx::TensorProto::DOUBLE: element_size = 8; break;
      default: return Status::Ok();  // ONNX's inference parses no other type
    }
    if (tensor.raw_data().size() % element_size == 0) return Status::Ok();
    return InvalidModel(DescribeTensor(tensor, node_name) + ": raw_data holds " +
                        std::to_string(tensor.raw_data().size()) + " bytes, not a whole number of " +
                        std::to_string(element_size) + "-byte elements");
  });
}

void GuardShapeInference() {
  static std::once_flag once;
  std::call_once(once, [] {
    Guard("Einsum", CheckEinsumOperands);
    Guard("ConvTranspose", CheckConvTransposeOperands);
    for (const char* op_type : {"Conv", "ConvInteger", "DeformConv"}) Guard(op_type, CheckWeightRankMatchesInput<1>);
    Guard("QLinearConv", CheckWeightRankMatchesInput<3>);
    for (const char* op_type : {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "DeformConv", "MaxPool",
                                "AveragePool", "LpPool", "MaxUnpool"}) {
      Guard(op_type, CheckPositiveStrides);
    }
    GuardDataPropagation("Slice", SliceDataPropagationApplies);
    std::set<std::string> op_types;
    for (const onnx::OpSchema& schema : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
      if (schema.domain() == onnx::ONNX_DOMAIN && schema.has_data_propagation_function()) {
        op_types.insert(schema.Name());
      }
    }
    for (const std::string& op_type : op_types) GuardDataPropagation(op_type.c_str(), InputsAreShapeSized);
  });
}

}  // namespace onnx_amp
