// Registers the CPU kernels of the shape / data-movement family.
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/tensor/tensor_kernels.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterTensorCpuKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view op_type;
    KernelFn compute;
  };
  static constexpr Entry kEntries[] = {
      {"Reshape", ReshapeKernel},
      {"Flatten", FlattenKernel},
      {"Squeeze", SqueezeKernel},
      {"Unsqueeze", UnsqueezeKernel},
      {"Shape", ShapeKernel},
      {"Size", SizeKernel},
      {"Transpose", TransposeKernel},
      {"DepthToSpace", DepthToSpaceKernel},
      {"SpaceToDepth", SpaceToDepthKernel},
      {"Slice", SliceKernel},
      {"Concat", ConcatKernel},
      {"Split", SplitKernel},
      {"Gather", GatherKernel},
      {"GatherElements", GatherElementsKernel},
      {"GatherND", GatherNDKernel},
      {"ScatterElements", ScatterElementsKernel},
      {"Scatter", ScatterElementsKernel},
      {"ScatterND", ScatterNDKernel},
      {"Expand", ExpandKernel},
      {"Tile", TileKernel},
      {"Pad", PadKernel},
      {"CenterCropPad", CenterCropPadKernel},
      {"Resize", ResizeKernel},
      {"Upsample", UpsampleKernel},
      {"ConstantOfShape", ConstantOfShapeKernel},
      {"Range", RangeKernel},
      {"OneHot", OneHotKernel},
      {"EyeLike", EyeLikeKernel},
      {"NonZero", NonZeroKernel},
      {"Compress", CompressKernel},
      {"Unique", UniqueKernel},
      {"Trilu", TriluKernel},
      {"ReverseSequence", ReverseSequenceKernel},
      {"Dropout", DropoutKernel},
  };
  for (const Entry& entry : kEntries) {
    registry.Register(KernelDef{"", entry.op_type, DeviceKind::kCpu, entry.compute});
  }
  registry.Register({kOnnxAmpDomain, "GatherGrad", DeviceKind::kCpu, &GatherGradKernel});
}

}  // namespace onnx_amp
