#include "converter/verify_output.h"

#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/onnx/onnx_checks.h"
#include "runtime/onnx/tensor_walk.h"
#include "runtime/onnx/type_inference.h"

namespace onnx_amp {
namespace {

Status Broken(const Status& status) {
  return InternalError("the converted model fails verification: " + status.message());
}

// The main graph keeps its I/O names, and the kept ones their dtypes.
Status CheckInterface(const onnx::GraphProto& before, const onnx::GraphProto& after, const KeepIoTypes& keep) {
  auto compare = [&](const auto& old_list, const auto& new_list, const char* what) -> Status {
    if (old_list.size() != new_list.size()) {
      return InternalError(std::string("the converted model has a different number of graph ") + what + "s");
    }
    for (int k = 0; k < old_list.size(); ++k) {
      const auto& old_info = old_list.Get(k);
      const auto& new_info = new_list.Get(k);
      if (old_info.name() != new_info.name()) {
        return InternalError(std::string("graph ") + what + " '" + old_info.name() + "' was renamed to '" +
                             new_info.name() + "'");
      }
      if (keep.Keeps(old_info.name()) &&
          old_info.type().tensor_type().elem_type() != new_info.type().tensor_type().elem_type()) {
        return InternalError(std::string("graph ") + what + " '" + old_info.name() +
                             "' changed dtype although keep-io-types keeps it");
      }
    }
    return Status::Ok();
  };
  ONNX_AMP_RETURN_IF_ERROR(compare(before.input(), after.input(), "input"));
  return compare(before.output(), after.output(), "output");
}

bool IsLow(const ValueType& type) { return IsLowPrecision(type.TensorDType()); }

// Float16 and bfloat16 tensors in memory hold as many values as their dims say (the
// converter wrote them; tensors still in their files are converted while written).
Status CheckLowTensors(const onnx::ModelProto& model) {
  return ForEachTensor(model, [](const onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    const bool low = tensor.data_type() == onnx::TensorProto::FLOAT16 || tensor.data_type() == onnx::TensorProto::BFLOAT16;
    if (!low || tensor.data_location() == onnx::TensorProto::EXTERNAL) return Status::Ok();
    uint64_t count = 1;
    for (int64_t dim : tensor.dims()) count *= static_cast<uint64_t>(dim);
    const uint64_t held = tensor.raw_data().empty() ? static_cast<uint64_t>(tensor.int32_data_size())
                                                    : tensor.raw_data().size() / 2;
    if (held == count && (tensor.raw_data().size() % 2) == 0) return Status::Ok();
    return InvalidModel(DescribeTensor(tensor, node_name) + " holds " + std::to_string(held) + " values for dims of " +
                        std::to_string(count));
  });
}

// The default level: types, definitions and converted tensors in one pass each.
Status CheckConversion(onnx::ModelProto& converted, const VerifyOptions& options) {
  const bool portable = options.target == ConvertTarget::kPortable;
  // The onnx-amp target runs any op, Cast included, in any float dtype at any opset:
  // no schema's type constraints apply there.
  const NodeFilter changed = [portable](const onnx::NodeProto& node, std::span<const ValueType> inputs,
                                        std::span<const ValueType> outputs) {
    if (!portable) return false;
    if (node.op_type() == "Cast") return true;
    for (const ValueType& type : inputs) {
      if (IsLow(type)) return true;
    }
    for (const ValueType& type : outputs) {
      if (IsLow(type)) return true;
    }
    return false;
  };
  Expected<ModelTypes> checked = CheckModelTypes(converted, changed);
  if (!checked.ok()) return checked.status();
  return CheckLowTensors(converted);
}

}  // namespace

std::string_view VerifyLevelName(VerifyLevel level) {
  switch (level) {
    case VerifyLevel::kDefault: return "default";
    case VerifyLevel::kFull: return "full";
    case VerifyLevel::kNone: return "none";
  }
  return "?";
}

Expected<VerifyLevel> ParseVerifyLevel(std::string_view name) {
  for (VerifyLevel level : {VerifyLevel::kDefault, VerifyLevel::kFull, VerifyLevel::kNone}) {
    if (name == VerifyLevelName(level)) return level;
  }
  return InvalidArgument("--verify: unknown level '" + std::string(name) + "' (expected default, full or none)");
}

Status VerifyConvertedModel(const onnx::GraphProto& original_io, onnx::ModelProto& converted,
                            const VerifyOptions& options) {
  switch (options.level) {
    case VerifyLevel::kNone: return Status::Ok();
    case VerifyLevel::kDefault: {
      Status checked = CheckConversion(converted, options);
      if (!checked.ok()) return Broken(checked);
      break;
    }
    case VerifyLevel::kFull: {
      Status checked = CheckModelWithData(converted, options.external_data_folder);
      if (!checked.ok()) return Broken(checked);
      if (options.target == ConvertTarget::kPortable) {
        // The checker's full check is this strict inference without data propagation;
        // running only the data-propagating one (shapes from Shape/Gather/Concat chains)
        // checks the same nodes with more known shapes, once, leaving no value_info behind.
        Status inferred = InspectInferred(converted, /*strict=*/true, nullptr);
        if (!inferred.ok()) return Broken(inferred);
      }
      break;
    }
  }
  return CheckInterface(original_io, converted.graph(), options.keep_io_types);
}

}  // namespace onnx_amp
