// few_rows_kernels.h on AVX-512: 16 lanes.
#include "ops/common/few_rows_matmul.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/float_vec_avx512.h"

#define ONNX_AMP_FEW_ROWS_TARGET ONNX_AMP_AVX512_FLOATS
#include "ops/common/few_rows_kernels.h"

namespace onnx_amp {

ONNX_AMP_FEW_ROWS_TARGET void FewRowsAvx512(const FewRowsArgs& args) { RunFewRows<Avx512Floats>(args); }

}  // namespace onnx_amp

#endif  // x86
