#include "ops/common/widened_panels.h"

#include <algorithm>
#include <optional>

#include "ops/common/converting_relayout.h"
#include "ops/common/onednn_utils.h"
#include "ops/common/weight_pack.h"
#include "runtime/core/convert.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

using dt = dnnl::memory::data_type;

// Bytes of one operand's float32 panel up to which it is widened whole; a product whose
// operands all fit runs on whole copies (matmul_problem.cc).
constexpr int64_t kPanelBytes = int64_t{4} << 20;

// Floats every panelled product may hold in work tensors, whatever its size: two such
// panels.
constexpr int64_t kMinWorkFloats = 2 * kPanelBytes / static_cast<int64_t>(sizeof(float));

// Columns of B below which a column panel's product loses rate, and the least depth of
// a slice along k.
constexpr int64_t kMinPanelColumns = 256;
constexpr int64_t kMinPanelDepth = 256;

// Result elements per parallel chunk of the finishing pass.
constexpr int64_t kFinishChunk = int64_t{1} << 16;

int64_t RoundDownTo64(int64_t value) { return value / 64 * 64; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How a product is cut: A in panels of `rows` rows, B in panels of `cols` columns, and
// both in slices of `depth` along k. With all n columns and all k, B is widened once,
// before the first row panel, and each row panel's result is finished into the output
// before the next (from rows x n work floats, or in the output itself when that is
// float32); with fewer columns, each rows x cols block of the result is (from rows x cols
// work floats). A cut along k sums the slices' products into the block in order.
struct PanelPlan {
  int64_t rows = 0, cols = 0, depth = 0;
};

// The float32 work floats (panels and result) a product may hold: a third of what its
// low-precision operands and output save against float32 ones (2 bytes an element), and
// at least kMinWorkFloats. So a mixed step's peak stays at or below the float32 step's,
// whose operands and outputs are twice as large, although its low-precision weight
// copies come on top (half of the saving put the MLP's batch-1024 step 1.5% above
// float32's peak RSS, a third 2% below it).
int64_t WorkBudget(int64_t m, int64_t k, int64_t n, bool low_output) {
  const int64_t saved_bytes = 2 * (m * k + k * n + (low_output ? m * n : 0));
  return std::max(kMinWorkFloats, saved_bytes / 3 / static_cast<int64_t>(sizeof(float)));
}

// B whole beside a 64-row panel of A (and the result's rows, for a low-precision output)
// within the budget: every element widened once.
bool BWholeFits(int64_t m, int64_t k, int64_t n, bool low_output) {
  const int64_t per_row = k + (low_output ? n : 0);
  return k * n + std::min<int64_t>(m, 64) * per_row <= WorkBudget(m, k, n, low_output);
}

// A whole beside 256-column panels of B within twice the budget, which also widens every
// element once: the MLP's mixed step at batch 1024 then ran 4% faster (its 4096 x 4096
// weights had been widened twice) and its peak RSS did not move, the peak lying where no
// product runs.
bool AWholeFits(int64_t m, int64_t k, int64_t n, bool low_output) {
  const int64_t cols = std::min(n, kMinPanelColumns);
  return m * (k + cols) + k * cols <= 2 * WorkBudget(m, k, n, low_output);
}

// The slice of k a product is cut into, k itself when it is not cut. It depends on the
// shape alone, never on the output's dtype: a MatMul with a Cast to float32 folded in
// must sum in the order the separate MatMul does. It is cut where k is the product's
// shortest side (a weight gradient at a batch below the layer's widths), where a
// float32 output fits neither B whole nor A whole, and a low-precision one not B whole.
// Such a product ran on rows x columns blocks: products of 256 columns over a short k,
// with B widened once per row panel. Sliced, all rows of A go beside slices of B of all
// n columns within twice the budget, every element is widened once, and a float32
// output holds the running sums. The weight gradient of a 4096 x 4096 layer at batch
// 1024 (4096 x 1024 x 4096, two 512-deep slices) took 214-225 against 258-276 ms on
// oneDNN's AVX2 kernels (float32: 208-220 ms), within noise of 130-160 ms either way on
// its AVX-512 ones. Over a long k slicing lost: the input gradient at batch 8192 (8192 x
// 4096 x 4096, four slices, its result block summed in four passes) took 958-969
// against 927 ms.
int64_t SliceDepth(int64_t m, int64_t k, int64_t n) {
  if (k >= std::min(m, n) || BWholeFits(m, k, n, false) || BWholeFits(m, k, n, true) || AWholeFits(m, k, n, false)) {
    return k;
  }
  const int64_t widest = std::max(kMinPanelDepth, RoundDownTo64(2 * WorkBudget(m, k, n, false) / (m + n)));
  if (widest >= k) return k;
  // Slices of equal depth (a multiple of 64), so the last one is not a sliver.
  return std::min(k, CeilDiv(CeilDiv(k, CeilDiv(k, widest)), 64) * 64);
}

// Row panels of A beside the widest column panels of B that twice the budget allows, where
// oneDNN runs AVX2 kernels: each of its calls packs its A panel again, so the 256-column
// panels beside the most rows (below) packed A 16 times over. Measured with
// ONNX_AMP_MAX_CPU_ISA=avx2 on the MLP's products at batch 8192, float16: the forward
// 1923-2016 -> 1804-1861 ms, the weight gradient 2142-2214 -> 1829-1840 ms (float32
// 1781-1790 and 1714 ms); 512 rows did worse (1846-1850 and 1923-1939). On AVX-512 the
// weight gradient ran 1135-1144 ms on 256-column panels and 1343-1399 ms on these.
constexpr int64_t kAvx2BlockRows = 1024;

// Within the budget, as few widenings as it allows: B whole, else A whole beside column
// panels of B, else the most rows of A beside column panels of B (B widened once per row
// panel; kAvx2BlockRows rows on oneDNN's AVX2 kernels). A product cut along k
// (SliceDepth) takes all n columns and, for a float32 output summed in place, all rows.
PanelPlan PlanPanels(int64_t m, int64_t k, int64_t n, bool low_output) {
  const int64_t budget = WorkBudget(m, k, n, low_output);
  const int64_t min_rows = std::min<int64_t>(m, 64), min_cols = std::min(n, kMinPanelColumns);
  PanelPlan plan;
  plan.depth = SliceDepth(m, k, n);
  plan.cols = n;
  if (plan.depth < k) {
    const int64_t result_per_row = low_output ? n : 0;
    plan.rows = std::clamp(RoundDownTo64((2 * budget - plan.depth * n) / (plan.depth + result_per_row)), min_rows, m);
    return plan;
  }
  if (BWholeFits(m, k, n, low_output)) {
    const int64_t per_row = k + (low_output ? n : 0);  // A's panel and the result's rows
    plan.rows = std::clamp(RoundDownTo64((budget - k * n) / per_row), min_rows, m);
    return plan;
  }
  if (AWholeFits(m, k, n, low_output)) {
    plan.rows = m;
    plan.cols = min_cols;
    return plan;
  }
  if (!dnn::OneDnnRunsAvx512()) {
    plan.rows = std::min(m, kAvx2BlockRows);
    plan.cols = std::clamp(RoundDownTo64((2 * budget - plan.rows * k) / (k + plan.rows)), min_cols, n);
    return plan;
  }
  plan.rows = std::clamp(RoundDownTo64((budget - k * min_cols) / (k + min_cols)), min_rows, m);
  plan.cols = std::clamp(RoundDownTo64((budget - plan.rows * k) / (k + plan.rows)), min_cols, n);
  return plan;
}

void Widen(const uint16_t* low, float* wide, size_t count, DType dtype) {
  if (dtype == DType::kFloat16) {
    ConvertHalfToFloat(low, wide, count);
  } else {
    ConvertBFloat16ToFloat(low, wide, count);
  }
}

// How a block of an operand with element strides `strides` is widened into its float32
// panel:
// - kRows: a row at a time (the panel row-major), its elements gathered first when they
//   are strided;
// - kColumns: a column at a time (the panel column-major), for a transposed operand
//   (columns contiguous, rows not);
// - kTransposedRows: a transposed A into a row-major panel, 16 rows at a time through a
//   16-bit transpose (AVX-512). oneDNN's float32 kernels transpose a column-major A
//   themselves, inside each product, so once per column panel of B: the MLP's weight
//   gradient at batch 8192 (4096 x 8192 x 4096, float16) ran its 1024 x 8192 x 256
//   panels in 1422 ms on column-major A panels.
enum class PanelOrder { kRows, kColumns, kTransposedRows };

PanelOrder OrderOf(const dnnl::memory::dims& strides, bool is_a) {
  if (strides[0] != 1 || strides[1] == 1) return PanelOrder::kRows;
  return is_a && dnn::TransposesSupported() ? PanelOrder::kTransposedRows : PanelOrder::kColumns;
}

// The element strides of a rows x columns panel in `order`.
dnnl::memory::dims PanelStrides(PanelOrder order, int64_t rows, int64_t columns) {
  if (order == PanelOrder::kColumns) return {1, rows};
  return {columns, 1};
}

// Widens the rows [first_row, first_row + rows) of a block starting at `first` of a
// transposed operand (element (i, j) at first[i + j * leading]) into the row-major
// `panel` of `columns` columns, 16 rows at a time through `strip` (16 x columns values).
void WidenTransposedRows(const uint16_t* first, int64_t leading, int64_t first_row, int64_t rows, int64_t columns,
                         DType dtype, uint16_t* strip, float* panel) {
  for (int64_t row = first_row; row < first_row + rows; row += 16) {
    const int64_t count = std::min<int64_t>(16, first_row + rows - row);
    if (count == 16) {
      dnn::PixelsToRows16Bits(first + row, leading, columns, strip, columns);
    } else {
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < columns; ++j) strip[i * columns + j] = first[row + i + j * leading];
      }
    }
    Widen(strip, panel + row * columns, static_cast<size_t>(count * columns), dtype);
  }
}

// Widens the block [row, row + rows) x [column, column + columns) of a 2-D low-precision
// operand with element strides `strides` into `panel`, in `order`.
void WidenBlock(const Tensor& low, const dnnl::memory::dims& strides, PanelOrder order, int64_t row, int64_t rows,
                int64_t column, int64_t columns, float* panel, ThreadPool& threads) {
  const uint16_t* first = static_cast<const uint16_t*>(low.raw_data()) + row * strides[0] + column * strides[1];
  const DType dtype = low.dtype();
  if (order == PanelOrder::kTransposedRows) {
    threads.ParallelFor(CeilDiv(rows, 16), ItemsPerChunk(16 * columns, int64_t{1} << 14), [&](int64_t begin, int64_t end) {
      std::vector<uint16_t> strip(static_cast<size_t>(16 * columns));
      const int64_t first_row = 16 * begin, last_row = std::min(rows, 16 * end);
      WidenTransposedRows(first, strides[1], first_row, last_row - first_row, columns, dtype, strip.data(), panel);
    });
    return;
  }
  const bool column_lines = order == PanelOrder::kColumns;
  const int64_t lines = column_lines ? columns : rows, length = column_lines ? rows : columns;
  const int64_t line_stride = column_lines ? strides[1] : strides[0];
  const int64_t element_stride = column_lines ? 1 : strides[1];
  threads.ParallelFor(lines, ItemsPerChunk(length, int64_t{1} << 14), [&](int64_t begin, int64_t end) {
    std::vector<uint16_t> gathered(element_stride == 1 ? 0 : static_cast<size_t>(length));
    for (int64_t l = begin; l < end; ++l) {
      const uint16_t* line = first + l * line_stride;
      float* to = panel + l * length;
      if (element_stride == 1) {
        Widen(line, to, static_cast<size_t>(length), dtype);
        continue;
      }
      for (int64_t e = 0; e < length; ++e) gathered[e] = line[e * element_stride];
      Widen(gathered.data(), to, gathered.size(), dtype);
    }
  });
}

// One block of B at a time, widened to float32 as its products ask: into a plain panel
// for a product oneDNN reads plain, or into the layout a large product packs B in
// (RelaysOut). Where PackWeights writes that layout, it widens the float16/bfloat16
// operand as it packs: no plain panel is written and read again (the MLP's mixed_float16
// step at batch 8192 packs about 270 million elements of B). Each form is kept while the
// block stays the same, so B whole is widened and packed once for all row panels.
class WidenedB {
 public:
  WidenedB(KernelContext& context, const Tensor& b, const dnnl::memory::dims& strides)
      : context_(context), b_(b), strides_(strides), order_(OrderOf(strides, false)) {}

  // Makes [row, row + rows) x [column, column + columns) the block.
  void Select(int64_t row, int64_t rows, int64_t column, int64_t columns) {
    if (row == row_ && rows == rows_ && column == column_ && columns == columns_) return;
    row_ = row, rows_ = rows, column_ = column, columns_ = columns;
    plain_ready_ = false;
    packed_layout_.reset();
  }

  // The plain panel's element strides.
  dnnl::memory::dims PlainStrides() const { return PanelStrides(order_, rows_, columns_); }

  Expected<const void*> Plain() {
    if (!plain_ready_) {
      if (plain_.num_elements() < rows_ * columns_) {
        ONNX_AMP_ASSIGN_OR_RETURN(plain_, context_.ScratchFloat32(rows_ * columns_));
      }
      WidenBlock(b_, strides_, order_, row_, rows_, column_, columns_, plain_.data<float>(), context_.threads());
      plain_ready_ = true;
    }
    return static_cast<const void*>(plain_.raw_data());
  }

  // The block in `layout`, for `product` (whose B it is, with PlainStrides).
  Expected<const void*> Packed(const MatMulProblem& product, const dnnl::memory::desc& layout) {
    if (packed_layout_ && *packed_layout_ == layout) return static_cast<const void*>(packed_.raw_data());
    const dt low_type = b_.dtype() == DType::kFloat16 ? dt::f16 : dt::bf16;
    const bool one_unit_stride = strides_[0] == 1 || strides_[1] == 1;
    Expected<const void*> packed = Unsupported("not packed");
    if (one_unit_stride && dnn::PacksWeights(layout, low_type)) {
      MatMulProblem low = product;
      low.b_strides = strides_;
      const auto* block = static_cast<const uint16_t*>(b_.raw_data()) + row_ * strides_[0] + column_ * strides_[1];
      packed = PackB(context_, low, block, low_type, layout, packed_);
    } else {
      ONNX_AMP_ASSIGN_OR_RETURN(const void* plain, Plain());
      packed = PackB(context_, product, plain, dt::f32, layout, packed_);
    }
    if (packed.ok()) packed_layout_ = layout;
    return packed;
  }

 private:
  KernelContext& context_;
  const Tensor& b_;
  const dnnl::memory::dims strides_;
  const PanelOrder order_;
  int64_t row_ = -1, rows_ = 0, column_ = -1, columns_ = 0;
  Tensor plain_, packed_;
  bool plain_ready_ = false;
  std::optional<dnnl::memory::desc> packed_layout_;
};

}  // namespace

bool WidensInPanels(const MatMulProblem& problem) {
  if (problem.a_dims.size() != 2 || problem.packed_b != nullptr) return false;
  const int64_t m = problem.a_dims[0], k = problem.a_dims[1], n = problem.b_dims[1];
  const int64_t panel_floats = kPanelBytes / static_cast<int64_t>(sizeof(float));
  return m * k > panel_floats || k * n > panel_floats;
}

Status WidenedMatMulInPanels(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                             Tensor& out, const std::vector<double>& addend) {
  const int64_t m = problem.a_dims[0], k = problem.a_dims[1], n = problem.b_dims[1];
  const DType dtype = a.dtype();
  // A float32 output holds the rounded results itself (a Cast to float32 folded in).
  const bool low_output = out.dtype() == dtype;
  const PanelPlan plan = PlanPanels(m, k, n, low_output);
  const bool sliced = plan.depth < k;
  ThreadPool& threads = context.threads();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor a_panel, context.ScratchFloat32(plan.rows * plan.depth));
  // The result's rows x cols block, unless it is written into the output in place.
  const bool in_block = low_output || plan.cols != n;
  Tensor block;
  if (in_block) {
    ONNX_AMP_ASSIGN_OR_RETURN(block, context.ScratchFloat32(plan.rows * plan.cols));
  }
  WidenedB widened_b(context, b, problem.b_strides);
  const PanelOrder a_order = OrderOf(problem.a_strides, true);
  dnnl::memory::dims a_strides;
  for (int64_t row = 0; row < m; row += plan.rows) {
    const int64_t mb = std::min(plan.rows, m - row);
    if (!sliced) {
      WidenBlock(a, problem.a_strides, a_order, row, mb, 0, k, a_panel.data<float>(), threads);
      a_strides = PanelStrides(a_order, mb, k);
    }
    for (int64_t column = 0; column < n; column += plan.cols) {
      const int64_t nb = std::min(plan.cols, n - column);
      float* c = in_block ? block.data<float>() : out.data<float>() + row * n;
      if (problem.accumulate) {
        for (int64_t i = 0; i < mb; ++i) {
          const auto from = addend.begin() + (row + i) * n + column;
          std::copy(from, from + nb, c + i * nb);
        }
      }
      // Slices after the first add their product to the block (with alpha, no bias again).
      for (int64_t depth = 0; depth < k; depth += plan.depth) {
        const int64_t kb = std::min(plan.depth, k - depth);
        if (sliced) {
          WidenBlock(a, problem.a_strides, a_order, row, mb, depth, kb, a_panel.data<float>(), threads);
          a_strides = PanelStrides(a_order, mb, kb);
        }
        widened_b.Select(depth, kb, column, nb);
        MatMulProblem sub = problem;
        sub.a_dims = {mb, kb};
        sub.a_strides = a_strides;
        sub.b_dims = {kb, nb};
        sub.b_strides = widened_b.PlainStrides();
        sub.c_dims = {mb, nb};
        sub.accumulate = problem.accumulate || depth > 0;
        sub.bias.clear();
        if (!problem.bias.empty() && depth == 0) {
          sub.bias.assign(problem.bias.begin() + column, problem.bias.begin() + column + nb);
        }
        dnn::WeightsSource b_source;
        if (RelaysOut(sub, dt::f32)) {
          b_source.pack_each_call = [&](const dnnl::memory::desc& layout) { return widened_b.Packed(sub, layout); };
        } else {
          ONNX_AMP_ASSIGN_OR_RETURN(const void* plain, widened_b.Plain());
          b_source.plain = [plain] { return plain; };
        }
        ONNX_AMP_RETURN_IF_ERROR(RunDnnlMatMul(sub, dt::f32, a_panel.raw_data(), b_source, FusedActivation{}, {dt::f32, c}));
      }
      threads.ParallelFor(mb, ItemsPerChunk(nb, kFinishChunk), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          FinishProductBlock(c + i * nb, out, dtype, (row + i) * n + column, nb, problem.activation);
        }
      });
    }
  }
  return Status::Ok();
}

}  // namespace onnx_amp
