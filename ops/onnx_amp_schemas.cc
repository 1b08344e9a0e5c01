#include "ops/onnx_amp_schemas.h"

#include <mutex>
#include <string>

#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterOnnxAmpOpSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    onnx::OpSchemaRegistry::DomainToVersionRange::Instance().AddDomainToVersion(std::string(kOnnxAmpDomain), 1, 1);
    for (auto list : {ElementwiseOnnxAmpSchemas, NormalizationOnnxAmpSchemas, ConvOnnxAmpSchemas,
                      TensorOnnxAmpSchemas, TrainingOnnxAmpSchemas}) {
      for (onnx::OpSchema& schema : list()) onnx::RegisterSchema(std::move(schema));
    }
  });
}

}  // namespace onnx_amp
