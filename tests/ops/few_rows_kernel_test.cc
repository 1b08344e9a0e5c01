// The few-rows kernels (ops/common/few_rows_matmul.h) called directly: every output sums
// its products in k order, one fused multiply-add at a time from +0, whichever columns
// it falls in (whole vectors, or the last columns fewer than a vector, summed in one
// vector's lanes over B's rows read past the chunk's columns), bit for bit on each
// instruction set the CPU has, for B's rows contiguous (transB = 0) as the bundled CNN's
// 1568 x 10 classifier at batch 1 stores them, and for a chunk of a wider B's columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/common/few_rows_matmul.h"
#include "runtime/core/float16.h"

namespace onnx_amp {
namespace {

struct Case {
  int rows;
  int64_t k, width;  // B is [k][width]
  int64_t n_begin, n_end;
};

// B's values as `dtype` bits (or float32), and their float32 values.
struct Weights {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};

Weights RandomWeights(DType dtype, size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Weights w;
  for (size_t i = 0; i < count; ++i) {
    const float value = uniform(rng);
    if (dtype == DType::kFloat32) {
      w.values.push_back(value);
      continue;
    }
    const uint16_t bits = dtype == DType::kFloat16 ? FloatToHalfBits(value) : FloatToBFloat16Bits(value);
    w.bits.push_back(bits);
    w.values.push_back(dtype == DType::kFloat16 ? HalfBitsToFloat(bits) : BFloat16BitsToFloat(bits));
  }
  return w;
}

void ExpectKOrder(FewRowsPath path) {
  const Case cases[] = {
      {1, 1568, 10, 0, 10},   // the CNN's classifier: no whole vector, all tail
      {4, 37, 21, 0, 21},     // one vector or two (AVX2) and a tail
      {2, 5, 3, 0, 3},        // rows shorter than the vector: no row read whole
      {3, 300, 100, 40, 53},  // a chunk of a wider B
      {1, 1, 7, 0, 7},
  };
  std::mt19937_64 rng(91);
  void (*kernel)(const FewRowsArgs&) = path == FewRowsPath::kAvx512 ? FewRowsAvx512 : FewRowsAvx2;
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : cases) {
      const std::string label = std::string(FewRowsPathName(path)) + " " + std::string(DTypeName(dtype)) +
                                " rows " + std::to_string(c.rows) + " k " + std::to_string(c.k) + " width " +
                                std::to_string(c.width);
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      std::vector<float> a(static_cast<size_t>(c.rows * c.k));
      for (float& value : a) value = uniform(rng);
      // B exactly [k][width]: a read past its last value would leave the allocation.
      const Weights w = RandomWeights(dtype, static_cast<size_t>(c.k * c.width), rng);
      const float untouched = -7.0f;
      std::vector<float> y(static_cast<size_t>(c.rows * c.width), untouched);
      FewRowsArgs args;
      args.a = a.data();
      args.rows = c.rows;
      args.k = c.k;
      args.w = dtype == DType::kFloat32 ? static_cast<const void*>(w.values.data()) : w.bits.data();
      args.w_dtype = dtype;
      args.w_k_stride = c.width;
      args.w_n_stride = 1;
      args.n_begin = c.n_begin;
      args.n_end = c.n_end;
      args.y = y.data();
      args.y_stride = c.width;
      kernel(args);
      int64_t wrong = 0;
      for (int i = 0; i < c.rows; ++i) {
        for (int64_t n = 0; n < c.width; ++n) {
          const float got = y[static_cast<size_t>(i * c.width + n)];
          if (n < c.n_begin || n >= c.n_end) {
            wrong += got != untouched;
            continue;
          }
          float want = 0.0f;
          for (int64_t kk = 0; kk < c.k; ++kk) {
            want = std::fma(a[static_cast<size_t>(i * c.k + kk)], w.values[static_cast<size_t>(kk * c.width + n)], want);
          }
          wrong += std::memcmp(&got, &want, sizeof(float)) != 0;
        }
      }
      EXPECT_EQ(wrong, 0) << label;
    }
  }
}

TEST(FewRowsKernels, SumEveryColumnInKOrderOnAvx512) {
  if (!FewRowsPathSupported(FewRowsPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL)";
  ExpectKOrder(FewRowsPath::kAvx512);
}

TEST(FewRowsKernels, SumEveryColumnInKOrderOnAvx2) {
  if (!FewRowsPathSupported(FewRowsPath::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2 with FMA and F16C";
  ExpectKOrder(FewRowsPath::kAvx2);
}

}  // namespace
}  // namespace onnx_amp
