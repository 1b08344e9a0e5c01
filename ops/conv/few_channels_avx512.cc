// few_channels_kernels.h on AVX-512: blocks of 16 maps.
#include "ops/conv/few_channels_loops.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/float_vec_avx512.h"

#define ONNX_AMP_FEW_CHANNELS_TARGET ONNX_AMP_AVX512_FLOATS
#include "ops/conv/few_channels_kernels.h"

namespace onnx_amp {

static_assert(Avx512Floats::kLanes == kFewChannelsLanesAvx512);

void FewChannelsSumRowAvx512(const FewChannelsRow& a) { SumRow<Avx512Floats>(a); }

void FewChannelsSumPooledRowAvx512(DType dtype, const FewChannelsPooledRow& a) { SumPooledRow<Avx512Floats, 4>(dtype, a); }

void FewChannelsAddImageAvx512(DType dtype, const FewChannelsImage& a, int64_t taps) {
  AddImage<Avx512Floats, static_cast<int>(kMaxFewChannelsTaps)>(dtype, a, taps);
}

}  // namespace onnx_amp

#endif  // x86
