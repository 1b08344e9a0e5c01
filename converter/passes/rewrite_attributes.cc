#include "converter/passes/rewrite_attributes.h"

#include <onnx/onnx_pb.h>

#include "converter/passes/low_tensor.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// Turns value_float / value_floats into an equivalent `value` tensor.
void MakeValueTensor(onnx::AttributeProto& attr) {
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  if (attr.name() == "value_float") {
    tensor.add_float_data(attr.f());
  } else {
    tensor.add_dims(attr.floats_size());
    for (float f : attr.floats()) tensor.add_float_data(f);
  }
  attr.Clear();
  attr.set_name("value");
  attr.set_type(onnx::AttributeProto::TENSOR);
  *attr.mutable_t() = std::move(tensor);
}

Status ConvertValue(onnx::NodeProto& node, onnx::AttributeProto& attr, DType low, ConversionReport& report) {
  onnx::TensorProto& tensor = *attr.mutable_t();
  if (!CanConvertTensor(tensor)) {
    return Unsupported("node '" + node.name() + "': its value is not inline float32 data");
  }
  const std::string saved_name = tensor.name();
  tensor.set_name(node.output(0));  // name the record after the value users see
  ONNX_AMP_ASSIGN_OR_RETURN(ClampedTensor record, ConvertTensorToLow(tensor, low));
  tensor.set_name(saved_name);
  if (record.clamped > 0 || record.flushed_to_zero > 0) report.clamped.push_back(record);
  ++report.constants_converted;
  return Status::Ok();
}

}  // namespace

Status RewriteAttributes(PassContext& context) {
  ConversionPlan& plan = context.plan;
  ConversionReport& report = context.report;
  const DType low = plan.low_type;
  for (size_t n = 0; n < plan.node_order.size(); ++n) {
    const onnx::NodeProto* const_node = plan.node_order[n];
    const std::span<const DType> output_types = plan.OutputTypes(n);
    // Painted low, not low already in the input: a low output written by a node that
    // computes low was float32 (the attributes below say which dtype they make).
    if (output_types.empty() || output_types[0] != low || plan.nodes[n].compute_type != low) continue;
    auto* node = const_cast<onnx::NodeProto*>(const_node);
    const bool onnx_domain = IsOnnxDomain(node->domain());
    if (onnx_domain && node->op_type() == "Constant") {
      for (auto& attr : *node->mutable_attribute()) {
        if (attr.name() == "value_float" || attr.name() == "value_floats") MakeValueTensor(attr);
        if (attr.name() == "value") ONNX_AMP_RETURN_IF_ERROR(ConvertValue(*node, attr, low, report));
      }
    } else if (onnx_domain && node->op_type() == "ConstantOfShape") {
      bool has_value = false;
      for (auto& attr : *node->mutable_attribute()) {
        if (attr.name() != "value") continue;
        has_value = true;
        ONNX_AMP_RETURN_IF_ERROR(ConvertValue(*node, attr, low, report));
      }
      if (!has_value) {  // the default value is float32 zero
        auto* attr = node->add_attribute();
        attr->set_name("value");
        attr->set_type(onnx::AttributeProto::TENSOR);
        attr->mutable_t()->set_data_type(ToOnnx(low));
        attr->mutable_t()->add_dims(1);
        attr->mutable_t()->set_raw_data(std::string(2, '\0'));
      }
    } else {
      for (auto& attr : *node->mutable_attribute()) {
        if (attr.name() == "dtype" && attr.i() == ToOnnx(DType::kFloat32)) attr.set_i(ToOnnx(low));
      }
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
