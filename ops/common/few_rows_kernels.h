// The vector loops of few_rows_matmul.h, written once over a vector type and compiled
// once per instruction set: few_rows_avx512.cc and few_rows_avx2.cc define
// ONNX_AMP_FEW_ROWS_TARGET (a target attribute) before including this, and pass their
// vector type (ops/common/float_vec_avx512.h, float_vec_avx2.h). Only these functions
// carry the target (the files themselves are compiled for any x86-64), and all have
// internal linkage, so the two copies never meet.
#ifndef ONNX_AMP_FEW_ROWS_TARGET
#error "define ONNX_AMP_FEW_ROWS_TARGET before including few_rows_kernels.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/common/few_rows_matmul.h"
#include "runtime/core/float16.h"

namespace onnx_amp {
namespace {

// One weight, widened exactly.
template <DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET float ScalarWeight(const void* w, int64_t index) {
  if constexpr (kDtype == DType::kFloat32) {
    return static_cast<const float*>(w)[index];
  } else if constexpr (kDtype == DType::kFloat16) {
    return HalfBitsToFloat(static_cast<const uint16_t*>(w)[index]);
  } else {
    return BFloat16BitsToFloat(static_cast<const uint16_t*>(w)[index]);
  }
}

// The last columns of RowsTimesWeightRows, fewer than a vector: y[i][n] for n in [n, end)
// summed in k order in the lanes of one vector per row, held in registers. Each row of B
// is read a whole vector wide from column n on, past `end` into the next row (those lanes'
// sums are dropped), which stays inside B for every row but the last ones; those rows
// are added one product at a time, still in k order.
template <typename Vec, int kRows, DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET void RowsTimesWeightRowsTail(const FewRowsArgs& args, int64_t n) {
  const int64_t lanes = Vec::kLanes, end = args.n_end, k = args.k;
  // Row kk's vector ends at kk * k_stride + n + lanes; B holds at least
  // (k - 1) * k_stride + end values.
  int64_t whole_rows = 0;
  if (args.w_k_stride > 0) {
    const int64_t past = n + lanes - end;  // values read past row k - 1's last column
    whole_rows = std::clamp<int64_t>(k - (past + args.w_k_stride - 1) / args.w_k_stride, 0, k);
  }
  typename Vec::Type acc[kRows];
  for (int i = 0; i < kRows; ++i) acc[i] = Vec::Zero();
  for (int64_t kk = 0; kk < whole_rows; ++kk) {
    const auto weights = Vec::template Widen<kDtype>(args.w, kk * args.w_k_stride + n);
    for (int i = 0; i < kRows; ++i) acc[i] = Vec::Fma(Vec::Splat(args.a[i * k + kk]), weights, acc[i]);
  }
  float sums[kRows][Vec::kLanes];
  for (int i = 0; i < kRows; ++i) Vec::Store(sums[i], acc[i]);
  for (int64_t column = n; column < end; ++column) {
    for (int i = 0; i < kRows; ++i) {
      float y = sums[i][column - n];
      for (int64_t kk = whole_rows; kk < k; ++kk) {
        y = std::fma(args.a[i * k + kk], ScalarWeight<kDtype>(args.w, kk * args.w_k_stride + column), y);
      }
      args.y[i * args.y_stride + column] = y;
    }
  }
}

// B's rows contiguous along n (B[k][n] at k * k_stride + n): y[i][n] += a[i][k] * B[k][n]
// for k in order, four rows of B per sweep over the columns, so each column's sum runs
// in k order in every lane, the last columns' too (RowsTimesWeightRowsTail).
template <typename Vec, int kRows, DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET void RowsTimesWeightRows(const FewRowsArgs& args) {
  const int64_t lanes = Vec::kLanes;
  const int64_t begin = args.n_begin, end = args.n_end;
  const int64_t vector_end = begin + (end - begin) / lanes * lanes;
  for (int i = 0; i < kRows; ++i) {
    for (int64_t n = begin; n < vector_end; ++n) args.y[i * args.y_stride + n] = 0.0f;
  }
  for (int64_t k0 = 0; k0 < args.k; k0 += 4) {
    const int64_t depth = std::min<int64_t>(4, args.k - k0);
    for (int64_t n = begin; n < vector_end; n += lanes) {
      typename Vec::Type acc[kRows];
      for (int i = 0; i < kRows; ++i) acc[i] = Vec::Load(args.y + i * args.y_stride + n);
      for (int64_t kk = 0; kk < depth; ++kk) {
        const auto weights = Vec::template Widen<kDtype>(args.w, (k0 + kk) * args.w_k_stride + n);
        for (int i = 0; i < kRows; ++i) acc[i] = Vec::Fma(Vec::Splat(args.a[i * args.k + k0 + kk]), weights, acc[i]);
      }
      for (int i = 0; i < kRows; ++i) Vec::Store(args.y + i * args.y_stride + n, acc[i]);
    }
  }
  if (vector_end < end) RowsTimesWeightRowsTail<Vec, kRows, kDtype>(args, vector_end);
}

// B's columns contiguous along k (B[k][n] at n * n_stride + k, a transposed weight):
// y[i][n] = dot(a[i], column n), four columns at a time, each dot in vector lanes over k
// summed in a fixed tree, the tail of k added after in order.
// y[i][n] = the lanes of `acc` summed, then the products of k's tail added in order.
template <typename Vec, DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET void FinishDot(const FewRowsArgs& args, int i, int64_t n, typename Vec::Type acc) {
  const int64_t k = args.k;
  float sum = Vec::Sum(acc);
  for (int64_t kk = k / Vec::kLanes * Vec::kLanes; kk < k; ++kk) {
    sum = std::fma(args.a[i * k + kk], ScalarWeight<kDtype>(args.w, n * args.w_n_stride + kk), sum);
  }
  args.y[i * args.y_stride + n] = sum;
}

template <typename Vec, int kRows, DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET void RowsDotWeightColumns(const FewRowsArgs& args) {
  constexpr int kColumns = 4;
  const int64_t lanes = Vec::kLanes, k = args.k;
  const int64_t body = k / lanes * lanes;
  int64_t n = args.n_begin;
  for (; n + kColumns <= args.n_end; n += kColumns) {
    typename Vec::Type acc[kColumns][kRows];
    for (int j = 0; j < kColumns; ++j) {
      for (int i = 0; i < kRows; ++i) acc[j][i] = Vec::Zero();
    }
    for (int64_t kk = 0; kk < body; kk += lanes) {
      typename Vec::Type a[kRows];
      for (int i = 0; i < kRows; ++i) a[i] = Vec::Load(args.a + i * k + kk);
      for (int j = 0; j < kColumns; ++j) {
        const auto weights = Vec::template Widen<kDtype>(args.w, (n + j) * args.w_n_stride + kk);
        for (int i = 0; i < kRows; ++i) acc[j][i] = Vec::Fma(a[i], weights, acc[j][i]);
      }
    }
    for (int j = 0; j < kColumns; ++j) {
      for (int i = 0; i < kRows; ++i) FinishDot<Vec, kDtype>(args, i, n + j, acc[j][i]);
    }
  }
  for (; n < args.n_end; ++n) {
    typename Vec::Type acc[kRows];
    for (int i = 0; i < kRows; ++i) acc[i] = Vec::Zero();
    for (int64_t kk = 0; kk < body; kk += lanes) {
      const auto weights = Vec::template Widen<kDtype>(args.w, n * args.w_n_stride + kk);
      for (int i = 0; i < kRows; ++i) acc[i] = Vec::Fma(Vec::Load(args.a + i * k + kk), weights, acc[i]);
    }
    for (int i = 0; i < kRows; ++i) FinishDot<Vec, kDtype>(args, i, n, acc[i]);
  }
}

template <typename Vec, int kRows, DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET void RunForm(const FewRowsArgs& args) {
  if (args.w_n_stride == 1) {
    RowsTimesWeightRows<Vec, kRows, kDtype>(args);
  } else {
    RowsDotWeightColumns<Vec, kRows, kDtype>(args);
  }
}

template <typename Vec, DType kDtype>
ONNX_AMP_FEW_ROWS_TARGET void RunRows(const FewRowsArgs& args) {
  switch (args.rows) {
    case 1: return RunForm<Vec, 1, kDtype>(args);
    case 2: return RunForm<Vec, 2, kDtype>(args);
    case 3: return RunForm<Vec, 3, kDtype>(args);
    default: return RunForm<Vec, 4, kDtype>(args);
  }
}

template <typename Vec>
ONNX_AMP_FEW_ROWS_TARGET void RunFewRows(const FewRowsArgs& args) {
  switch (args.w_dtype) {
    case DType::kFloat16: return RunRows<Vec, DType::kFloat16>(args);
    case DType::kBFloat16: return RunRows<Vec, DType::kBFloat16>(args);
    default: return RunRows<Vec, DType::kFloat32>(args);
  }
}

}  // namespace
}  // namespace onnx_amp
