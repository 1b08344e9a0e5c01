// Gradient rules of the shape and data-movement family. Ops that only rearrange
// elements route the gradient back the same way; selections scatter it into zeros.
#include "ops/gradient_context.h"
#include "ops/gradients.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// Zeros of `dtype` with the run-time shape of `like` (ConstantOfShape: opset >= 9).
std::string ZerosLike(GradientContext& c, const std::string& like, DType dtype) {
  onnx::TensorProto zero;
  zero.set_data_type(ToOnnx(dtype));
  zero.add_dims(1);
  zero.set_raw_data(std::string(DTypeSize(dtype), '\0'));  // zero is all-zero bits in every float type
  return c.EmitValue("ConstantOfShape", {c.ShapeOf(like)}, {MakeAttribute("value", zero)});
}

// A rank-0 int64 constant.
std::string ScalarInt64(GradientContext& c, int64_t value) {
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_int64_data(value);
  return c.EmitValue("Constant", {}, {MakeAttribute("value", tensor)});
}

// dX = dY
Status IdentityGrad(GradientContext& c) {
  c.Emit("Identity", {c.GO(0)}, {c.GI(0)});
  return Status::Ok();
}

// Reshape, Flatten, Squeeze, Unsqueeze: dX = reshape(dY, shape(X))
Status ReshapeGrad(GradientContext& c) {
  std::optional<Shape> shape = c.StaticShape(c.I(0));
  c.Emit("Reshape", {c.GO(0), shape ? c.ConstInts(*shape) : c.ShapeOf(c.I(0))}, {c.GI(0)});
  return Status::Ok();
}

// dX = transpose(dY, inverse(perm)); the default perm (reversal) is its own inverse.
Status TransposeGrad(GradientContext& c) {
  const std::vector<int64_t> perm = c.AttrInts("perm");
  if (perm.empty()) {
    c.Emit("Transpose", {c.GO(0)}, {c.GI(0)});
    return Status::Ok();
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size())) {
      return c.Error(ErrorCode::kInvalidModel, "perm is not a permutation");
    }
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  }
  c.Emit("Transpose", {c.GO(0)}, {c.GI(0)}, {MakeAttribute("perm", inverse)});
  return Status::Ok();
}

// dX = dY summed over the broadcast axes
Status ExpandGrad(GradientContext& c) { return c.UnbroadcastLike(c.GO(0), c.O(0), c.I(0), c.GI(0)); }

// Y = tile(X, r): dY viewed as [r0, d0, r1, d1, ...] summed over the r axes.
Status TileGrad(GradientContext& c) {
  const std::optional<Shape> shape = c.StaticShape(c.I(0));
  const std::optional<std::vector<int64_t>> repeats = c.ConstantInts(c.I(1));
  if (!shape || !repeats || repeats->size() != shape->size()) {
    return c.Error(ErrorCode::kUnsupported, "needs a static input shape and constant repeats");
  }
  std::vector<int64_t> split_shape;
  std::vector<int64_t> repeat_axes;
  for (size_t i = 0; i < shape->size(); ++i) {
    repeat_axes.push_back(static_cast<int64_t>(split_shape.size()));
    split_shape.push_back((*repeats)[i]);
    split_shape.push_back((*shape)[i]);
  }
  const std::string split = c.EmitValue("Reshape", {c.GO(0), c.ConstInts(split_shape)});
  c.Emit("Identity", {c.ReduceSum(split, repeat_axes, false)}, {c.GI(0)});
  return Status::Ok();
}

// dX_i = slice of dY along `axis` at X_i's offset
Status ConcatGrad(GradientContext& c) {
  int64_t axis = c.AttrInt("axis", 0);
  if (axis < 0) {
    const std::optional<int64_t> rank = c.Rank(c.O(0));
    if (!rank) return c.Error(ErrorCode::kUnsupported, "a negative axis needs a known rank");
    axis += *rank;
  }
  // Offsets are constants when every input's extent along `axis` is static.
  bool static_extents = true;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const std::optional<Shape> shape = c.StaticShape(c.I(i));
    static_extents = static_extents && shape && static_cast<int64_t>(shape->size()) > axis;
  }
  if (c.default_opset() < 10) {
    // Slice-1 takes starts and ends as attributes: constant offsets only.
    if (!static_extents) return c.NeedsOpset(10, "Slice with offsets computed at run time");
    int64_t begin = 0;
    for (int i = 0; i < c.num_inputs(); ++i) {
      const int64_t end = begin + (*c.StaticShape(c.I(i)))[static_cast<size_t>(axis)];
      if (c.NeedsGI(i)) {
        c.Emit("Slice", {c.GO(0)}, {c.GI(i)},
               {MakeAttribute("axes", std::vector<int64_t>{axis}), MakeAttribute("starts", std::vector<int64_t>{begin}),
                MakeAttribute("ends", std::vector<int64_t>{end})});
      }
      begin = end;
    }
    return Status::Ok();
  }
  const std::string axes = c.ConstInts({axis});
  int64_t offset = 0;
  std::string start = c.ConstInts({0});
  for (int i = 0; i < c.num_inputs(); ++i) {
    std::string end;
    if (static_extents) {
      offset += (*c.StaticShape(c.I(i)))[static_cast<size_t>(axis)];
      end = c.ConstInts({offset});
    } else {
      const std::string extent = c.EmitValue("Slice", {c.ShapeOf(c.I(i)), axes, c.ConstInts({axis + 1})});
      end = c.EmitValue("Add", {start, extent});
    }
    if (c.NeedsGI(i)) c.Emit("Slice", {c.GO(0), start, end, axes}, {c.GI(i)});
    start = end;
  }
  return Status::Ok();
}

// dX = concat(dY_i), zeros for outputs without a gradient
Status SplitGrad(GradientContext& c) {
  const DType type = c.ValueType(c.I(0));
  std::vector<std::string> parts;
  for (int i = 0; i < c.num_outputs(); ++i) {
    if (!c.HasGO(i)) ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(9, "ConstantOfShape, for the outputs without a gradient"));
    parts.push_back(c.HasGO(i) ? c.GO(i) : ZerosLike(c, c.O(i), type));
  }
  c.Emit("Concat", parts, {c.GI(0)}, {MakeAttribute("axis", c.AttrInt("axis", 0))});
  return Status::Ok();
}

// dX = zeros with dY scattered to the sliced positions: the same Slice applied to the
// flat index of every element of X tells where each dY element goes (any steps).
Status SliceGrad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(11, "ScatterND and Range"));
  const DType type = c.ValueType(c.I(0));
  const std::string size = c.EmitValue("Size", {c.I(0)});
  const std::string range = c.EmitValue("Range", {ScalarInt64(c, 0), size, ScalarInt64(c, 1)});
  std::vector<std::string> slice_inputs = {c.EmitValue("Reshape", {range, c.ShapeOf(c.I(0))})};
  for (int i = 1; i < c.num_inputs(); ++i) slice_inputs.push_back(c.I(i));
  const std::string picked =
      c.EmitValue("Slice", slice_inputs, c.CopyAttributes({"starts", "ends", "axes"}));
  const std::string indices = c.EmitValue("Reshape", {picked, c.ConstInts({-1, 1})});
  const std::string updates = c.EmitValue("Reshape", {c.GO(0), c.ConstInts({-1})});
  const std::string zeros = ZerosLike(c, c.EmitValue("Reshape", {c.I(0), c.ConstInts({-1})}), type);
  const std::string flat = c.EmitValue("ScatterND", {zeros, indices, updates});
  c.Emit("Reshape", {flat, c.ShapeOf(c.I(0))}, {c.GI(0)});
  return Status::Ok();
}

// dX = zeros(X) with dY added at the gathered rows   (fused: GatherGrad)
Status GatherGrad(GradientContext& c) {
  c.Emit("GatherGrad", {c.GO(0), c.I(1), c.ShapeOf(c.I(0))}, {c.GI(0)}, {MakeAttribute("axis", c.AttrInt("axis", 0))},
         kOnnxAmpDomain);
  return Status::Ok();
}

// dX = ScatterElements(zeros(X), indices, dY, reduction=add)
Status GatherElementsGrad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(16, "ScatterElements with reduction add"));
  const std::string zeros = ZerosLike(c, c.I(0), c.ValueType(c.I(0)));
  c.Emit("ScatterElements", {zeros, c.I(1), c.GO(0)}, {c.GI(0)},
         {MakeAttribute("axis", c.AttrInt("axis", 0)), MakeAttribute("reduction", std::string("add"))});
  return Status::Ok();
}

// dX = ScatterND(zeros(X), indices, dY, reduction=add)
Status GatherNDGrad(GradientContext& c) {
  if (c.AttrInt("batch_dims", 0) != 0) return c.Error(ErrorCode::kUnsupported, "batch_dims != 0 is not supported");
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(16, "ScatterND with reduction add"));
  const std::string zeros = ZerosLike(c, c.I(0), c.ValueType(c.I(0)));
  c.Emit("ScatterND", {zeros, c.I(1), c.GO(0)}, {c.GI(0)}, {MakeAttribute("reduction", std::string("add"))});
  return Status::Ok();
}

// Constant mode only: dX = pad(dY, -pads), which crops the padding away (and pads
// back what a negative pad cropped). The pad value is a constant: no gradient.
Status PadGrad(GradientContext& c) {
  if (!c.NeedsGI(0)) return Status::Ok();
  if (c.AttrString("mode", "constant") != "constant") {
    return c.Error(ErrorCode::kUnsupported, "only constant-mode Pad has a gradient");
  }
  if (c.opset() < 11) {
    std::vector<int64_t> pads = c.AttrInts("pads");
    for (int64_t& pad : pads) pad = -pad;
    c.Emit("Pad", {c.GO(0)}, {c.GI(0)}, {MakeAttribute("pads", pads)});
    return Status::Ok();
  }
  std::string negated;
  if (std::optional<std::vector<int64_t>> pads = c.ConstantInts(c.I(1))) {
    for (int64_t& pad : *pads) pad = -pad;
    negated = c.ConstInts(*pads);
  } else {
    negated = c.EmitValue("Neg", {c.I(1)});
  }
  std::vector<std::string> inputs = {c.GO(0), negated};
  if (c.HasInput(3)) inputs.insert(inputs.end(), {"", c.I(3)});
  c.Emit("Pad", inputs, {c.GI(0)});
  return Status::Ok();
}

// Training mode: dX = dY * mask / (1 - ratio), from the mask output the forward node is
// made to emit; otherwise (and before opset 12, where Dropout has no training mode and
// runs as the identity) dX = dY.
Status DropoutGrad(GradientContext& c) {
  if (!c.NeedsGI(0)) return Status::Ok();  // the ratio gets no gradient
  if (c.opset() < 12 || !c.HasInput(2)) return IdentityGrad(c);
  const DType type = c.ValueType(c.I(0));
  const std::string mask = c.CastTo(c.EnsureOutput(1), type);
  std::string scale;
  if (c.HasInput(1)) {
    std::string ratio = c.I(1);
    if (c.ValueType(ratio) != type) ratio = c.CastTo(ratio, type);
    const std::string one = c.ConstScalar(1.0, type);
    scale = c.EmitValue("Div", {one, c.EmitValue("Sub", {one, ratio})});
  } else {
    scale = c.ConstScalar(2.0, type);  // default ratio 0.5
  }
  const std::string kept = c.EmitValue("Mul", {c.EmitValue("Mul", {c.GO(0), mask}), scale});
  c.Emit("Where", {c.I(2), kept, c.GO(0)}, {c.GI(0)});
  return Status::Ok();
}

}  // namespace

void RegisterTensorGradients(GradientRegistry& registry) {
  registry.Register("", "Identity", IdentityGrad);
  registry.Register("", "Reshape", ReshapeGrad);
  registry.Register("", "Flatten", ReshapeGrad);
  registry.Register("", "Squeeze", ReshapeGrad);
  registry.Register("", "Unsqueeze", ReshapeGrad);
  registry.Register("", "Transpose", TransposeGrad);
  registry.Register("", "Expand", ExpandGrad);
  registry.Register("", "Tile", TileGrad);
  registry.Register("", "Concat", ConcatGrad);
  registry.Register("", "Split", SplitGrad);
  registry.Register("", "Slice", SliceGrad);
  registry.Register("", "Gather", GatherGrad);
  registry.Register("", "GatherElements", GatherElementsGrad);
  registry.Register("", "GatherND", GatherNDGrad);
  registry.Register("", "Pad", PadGrad);
  registry.Register("", "Dropout", DropoutGrad);
}

}  // namespace onnx_amp
