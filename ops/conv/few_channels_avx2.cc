// few_channels_kernels.h on AVX2 with FMA and F16C: blocks of 8 maps.
#include "ops/conv/few_channels_loops.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/float_vec_avx2.h"

#define ONNX_AMP_FEW_CHANNELS_TARGET ONNX_AMP_AVX2_FLOATS
#include "ops/conv/few_channels_kernels.h"

namespace onnx_amp {

static_assert(Avx2Floats::kLanes == kFewChannelsLanesAvx2);

void FewChannelsSumRowAvx2(const FewChannelsRow& a) { SumRow<Avx2Floats>(a); }

void FewChannelsSumPooledRowAvx2(DType dtype, const FewChannelsPooledRow& a) { SumPooledRow<Avx2Floats, 2>(dtype, a); }

void FewChannelsAddImageAvx2(DType dtype, const FewChannelsImage& a, int64_t taps) {
  AddImage<Avx2Floats, static_cast<int>(kMaxFewChannelsTapsAvx2)>(dtype, a, taps);
}

}  // namespace onnx_amp

#endif  // x86
