// few_rows_kernels.h on AVX2 with FMA and F16C: 8 lanes.
#include "ops/common/few_rows_matmul.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/float_vec_avx2.h"

#define ONNX_AMP_FEW_ROWS_TARGET ONNX_AMP_AVX2_FLOATS
#include "ops/common/few_rows_kernels.h"

namespace onnx_amp {

ONNX_AMP_FEW_ROWS_TARGET void FewRowsAvx2(const FewRowsArgs& args) { RunFewRows<Avx2Floats>(args); }

}  // namespace onnx_amp

#endif  // x86
