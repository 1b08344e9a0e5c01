#include "ops/common/widened_panels.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/convert.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

using dt = dnnl::memory::data_type;

// Bytes of one operand's float32 panel: small enough that the two panels of a product
// stay below what a float32 step holds instead (a mixed step peaks no higher), large
// enough that a panel's product runs at the GEMM's full rate.
constexpr int64_t kPanelBytes = int64_t{4} << 20;

// Rows (or columns) per panel of an operand with `extent` of them and `across` elements
// each: all of them when they fit kPanelBytes, else a multiple of 64.
int64_t PanelExtent(int64_t extent, int64_t across) {
  const int64_t fit = kPanelBytes / (static_cast<int64_t>(sizeof(float)) * std::max<int64_t>(across, 1));
  if (fit >= extent) return extent;
  return std::max<int64_t>(64, fit / 64 * 64);
}

void Widen(const uint16_t* low, float* wide, size_t count, DType dtype) {
  if (dtype == DType::kFloat16) {
    ConvertHalfToFloat(low, wide, count);
  } else {
    ConvertBFloat16ToFloat(low, wide, count);
  }
}

// Widens the `count` lines [first, first + count) of a strided 2-D operand into `panel`.
// A line runs along the operand's contiguous dim when it has one (then whole lines
// convert at once); `line_stride`/`element_stride` are the source strides of one line and
// one element along it, and the panel stores line l at l * line_length.
void WidenLines(const Tensor& low, int64_t line_stride, int64_t element_stride, int64_t line_length, int64_t first,
                int64_t count, float* panel, ThreadPool& threads) {
  const uint16_t* source = static_cast<const uint16_t*>(low.raw_data());
  const DType dtype = low.dtype();
  threads.ParallelFor(count, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(line_length, 1)),
                      [&](int64_t begin, int64_t end) {
                        std::vector<uint16_t> gathered(element_stride == 1 ? 0 : static_cast<size_t>(line_length));
                        for (int64_t l = begin; l < end; ++l) {
                          const uint16_t* line = source + (first + l) * line_stride;
                          float* out = panel + l * line_length;
                          if (element_stride == 1) {
                            Widen(line, out, static_cast<size_t>(line_length), dtype);
                            continue;
                          }
                          for (int64_t e = 0; e < line_length; ++e) gathered[e] = line[e * element_stride];
                          Widen(gathered.data(), out, gathered.size(), dtype);
                        }
                      });
}

// A row panel of A ([rows, K] from row `first`) widened; returns the sub-problem's strides:
// row-major when A's rows are contiguous, else column-major (a transposed A).
dnnl::memory::dims WidenAPanel(const Tensor& a, const MatMulProblem& p, int64_t first, int64_t rows, float* panel, ThreadPool& threads) {
  const int64_t k = p.a_dims[1];
  if (p.a_strides[1] == 1 || p.a_strides[0] != 1) {
    WidenLines(a, p.a_strides[0], p.a_strides[1], k, first, rows, panel, threads);
    return {k, 1};
  }
  // Columns contiguous: line c is column c's rows [first, first + rows).
  const uint16_t* source = static_cast<const uint16_t*>(a.raw_data());
  threads.ParallelFor(k, 16, [&](int64_t begin, int64_t end) {
    for (int64_t column = begin; column < end; ++column) {
      Widen(source + column * p.a_strides[1] + first, panel + column * rows, static_cast<size_t>(rows), a.dtype());
    }
  });
  return {1, rows};
}

// A column panel of B ([K, cols] from column `first`) widened; returns its strides:
// column-major when B's columns are contiguous (a transposed B), else row-major.
dnnl::memory::dims WidenBPanel(const Tensor& b, const MatMulProblem& p, int64_t first, int64_t cols, float* panel,
                               ThreadPool& threads) {
  const int64_t k = p.b_dims[0];
  if (p.b_strides[0] == 1 && p.b_strides[1] != 1) {  // columns contiguous: line j is column first + j
    WidenLines(b, p.b_strides[1], 1, k, first, cols, panel, threads);
    return {1, k};
  }
  // Rows contiguous (or neither): line r is row r's columns [first, first + cols).
  const uint16_t* source = static_cast<const uint16_t*>(b.raw_data());
  threads.ParallelFor(k, 16, [&](int64_t begin, int64_t end) {
    std::vector<uint16_t> gathered(p.b_strides[1] == 1 ? 0 : static_cast<size_t>(cols));
    for (int64_t row = begin; row < end; ++row) {
      const uint16_t* line = source + row * p.b_strides[0] + first * p.b_strides[1];
      if (p.b_strides[1] == 1) {
        Widen(line, panel + row * cols, static_cast<size_t>(cols), b.dtype());
        continue;
      }
      for (int64_t j = 0; j < cols; ++j) gathered[j] = line[j * p.b_strides[1]];
      Widen(gathered.data(), panel + row * cols, gathered.size(), b.dtype());
    }
  });
  return {cols, 1};
}

}  // namespace

bool WidensInPanels(const MatMulProblem& problem) {
  if (problem.a_dims.size() != 2 || problem.packed_b != nullptr) return false;
  const int64_t m = problem.a_dims[0], k = problem.a_dims[1], n = problem.b_dims[1];
  return PanelExtent(m, k) < m || PanelExtent(n, k) < n;
}

Status WidenedMatMulInPanels(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                             float* c) {
  const int64_t m = problem.a_dims[0], k = problem.a_dims[1], n = problem.b_dims[1];
  const int64_t rows = PanelExtent(m, k), cols = PanelExtent(n, k);
  ThreadPool& threads = context.threads();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor a_panel, context.ScratchFloat32(rows * k));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor b_panel, context.ScratchFloat32(k * cols));
  // Column panels of C are gathered into a dense work tensor around each product.
  Tensor c_panel;
  if (cols < n) {
    ONNX_AMP_ASSIGN_OR_RETURN(c_panel, context.ScratchFloat32(rows * cols));
  }
  dnnl::memory::dims b_strides;
  if (cols == n) b_strides = WidenBPanel(b, problem, 0, n, b_panel.data<float>(), threads);
  for (int64_t row = 0; row < m; row += rows) {
    const int64_t mb = std::min(rows, m - row);
    const dnnl::memory::dims a_strides = WidenAPanel(a, problem, row, mb, a_panel.data<float>(), threads);
    for (int64_t column = 0; column < n; column += cols) {
      const int64_t nb = std::min(cols, n - column);
      if (cols < n) b_strides = WidenBPanel(b, problem, column, nb, b_panel.data<float>(), threads);
      MatMulProblem sub = problem;
      sub.a_dims = {mb, k};
      sub.a_strides = a_strides;
      sub.b_dims = {k, nb};
      sub.b_strides = b_strides;
      sub.c_dims = {mb, nb};
      if (!problem.bias.empty()) sub.bias.assign(problem.bias.begin() + column, problem.bias.begin() + column + nb);
      float* target = c + row * n;
      if (nb < n) {
        target = c_panel.data<float>();
        if (problem.accumulate) {
          for (int64_t i = 0; i < mb; ++i) std::memcpy(target + i * nb, c + (row + i) * n + column, nb * sizeof(float));
        }
      }
      ONNX_AMP_RETURN_IF_ERROR(RunDnnlMatMul(sub, dt::f32, a_panel.data<float>(), b_panel.data<float>(), target));
      if (nb < n) {
        for (int64_t i = 0; i < mb; ++i) std::memcpy(c + (row + i) * n + column, target + i * nb, nb * sizeof(float));
      }
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
