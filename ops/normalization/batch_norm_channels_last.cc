#include "ops/normalization/batch_norm_channels_last.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "ops/common/float32_buffers.h"
#include "ops/normalization/lane_sums.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Chunks of at least ~16K elements: waking a thread for less costs more than it saves.
constexpr int64_t kMinParallelElements = int64_t{1} << 14;

struct Geometry {
  int64_t batch, pixels, channels;
};

Geometry GeometryOf(const Tensor& x) {
  const int64_t batch = x.dim(0), channels = x.dim(1);
  return {batch, batch * channels == 0 ? 0 : x.num_elements() / (batch * channels), channels};
}

// What ChannelLaneSums adds per channel, from rows of `a` and `b` (read alongside):
// kValues: a. kSquares: (a - mean)^2. kGrad, with a = dY and b = X: dY, and
// dY * (X - mean). kGradSquares: (X - mean)^2, then kGrad's two.
enum class SumKind { kValues, kSquares, kGrad, kGradSquares };

// Adds the terms of `rows` (at most 16) consecutive pixel rows (C values each) of a and b
// into the lanes of `kind`'s sums, row r into lane r: lanes[(k * 16 + lane) * C + c] for
// the k-th sum. One call per block of rows, so the loops inside are vectorised for the
// CPU at hand.
__attribute__((target_clones("avx512f", "avx2", "default"))) void AccumulateRows(
    SumKind kind, const float* __restrict a, const float* __restrict b, const float* __restrict mean, int64_t rows,
    int64_t channels, float* __restrict lanes) {
  const int64_t sum_stride = kLaneCount * channels;
  for (int64_t r = 0; r < rows; ++r) {
    const float* a_row = a + r * channels;
    const float* b_row = b + r * channels;
    float* sums = lanes + r * channels;
    switch (kind) {
      case SumKind::kValues:
        for (int64_t c = 0; c < channels; ++c) sums[c] += a_row[c];
        break;
      case SumKind::kSquares:
        for (int64_t c = 0; c < channels; ++c) sums[c] += (a_row[c] - mean[c]) * (a_row[c] - mean[c]);
        break;
      case SumKind::kGradSquares:
        for (int64_t c = 0; c < channels; ++c) sums[c] += (b_row[c] - mean[c]) * (b_row[c] - mean[c]);
        sums += sum_stride;
        [[fallthrough]];
      case SumKind::kGrad:
        for (int64_t c = 0; c < channels; ++c) {
          sums[c] += a_row[c];
          sums[sum_stride + c] += a_row[c] * (b_row[c] - mean[c]);
        }
        break;
    }
  }
}

// out = (in - mean[c]) * a[c] + b[c] over `rows` rows of C values.
__attribute__((target_clones("avx512f", "avx2", "default"))) void NormalizeRows(
    const float* __restrict in, const float* __restrict mean, const float* __restrict a, const float* __restrict b,
    int64_t rows, int64_t channels, float* __restrict out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) out[r * channels + c] = (in[r * channels + c] - mean[c]) * a[c] + b[c];
  }
}

// out = a[c] * g over `rows` rows of C values.
__attribute__((target_clones("avx512f", "avx2", "default"))) void ScaleRows(const float* __restrict g,
                                                                           const float* __restrict a, int64_t rows,
                                                                           int64_t channels, float* __restrict out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) out[r * channels + c] = a[c] * g[r * channels + c];
  }
}

// Training mode's dX over `rows` rows of C values.
__attribute__((target_clones("avx512f", "avx2", "default"))) void GradRows(
    const float* __restrict g, const float* __restrict x, const float* __restrict a, const float* __restrict mean,
    const float* __restrict inv_std, const float* __restrict mean_g, const float* __restrict mean_gx, int64_t rows,
    int64_t channels, float* __restrict out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      out[i] = a[c] * (g[i] - mean_g[c] - (x[i] - mean[c]) * inv_std[c] * mean_gx[c]);
    }
  }
}

int64_t SumsOf(SumKind kind) {
  switch (kind) {
    case SumKind::kValues:
    case SumKind::kSquares: return 1;
    case SumKind::kGrad: return 2;
    case SumKind::kGradSquares: return 3;
  }
  return 0;
}

// Per channel, the sums `kind` names over every pixel of `a` (and `b`; null for the
// kinds that read `a` alone) into totals[k][c] for the k-th sum, in the order
// BatchLaneSums sums the channel's NCHW planes. With `scale`, out = scale[c] * a is
// written in the same pass (`out` has a's shape).
void ChannelLaneSums(ThreadPool& threads, SumKind kind, const Tensor& a, const Tensor* b, const float* mean,
                     float* const* totals, const float* scale = nullptr, Tensor* out = nullptr) {
  const int64_t sums = SumsOf(kind);
  const Geometry g = GeometryOf(a);
  const int64_t run_size = sums * kLaneCount * g.channels;  // one run's lanes of every channel
  std::vector<float> runs(static_cast<size_t>(kBatchChunks * run_size));
  const int64_t grain = a.num_elements() < kMinParallelElements ? kBatchChunks : 1;
  threads.ParallelFor(kBatchChunks, grain, [&](int64_t chunk_begin, int64_t chunk_end) {
    const int64_t block = kLaneCount * g.channels;  // the 16 pixel rows of one lane each
    std::vector<float> a_buffer(static_cast<size_t>(a.dtype() == DType::kFloat32 ? 0 : block));
    std::vector<float> b_buffer(static_cast<size_t>(b == nullptr || b->dtype() == DType::kFloat32 ? 0 : block));
    const bool out_in_place = out != nullptr && out->dtype() == DType::kFloat32;
    std::vector<float> out_buffer(static_cast<size_t>(out == nullptr || out_in_place ? 0 : block));
    // The task's own lanes, copied out after each run: lanes of two tasks sharing a cache
    // line and written row after row made an earlier form of this pass three times slower.
    std::vector<float> lanes(static_cast<size_t>(run_size));
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      std::fill(lanes.begin(), lanes.end(), 0.0f);
      for (int64_t n = BatchChunkBegin(g.batch, chunk); n < BatchChunkBegin(g.batch, chunk + 1); ++n) {
        for (int64_t first = 0; first < g.pixels; first += kLaneCount) {
          const int64_t rows = std::min(kLaneCount, g.pixels - first);
          const int64_t offset = (n * g.pixels + first) * g.channels, count = rows * g.channels;
          const float* a_rows = Float32BlockOf(a, offset, count, a_buffer.data());
          const float* b_rows = b == nullptr ? a_rows : Float32BlockOf(*b, offset, count, b_buffer.data());
          AccumulateRows(kind, a_rows, b_rows, mean, rows, g.channels, lanes.data());
          if (out == nullptr) continue;
          float* out_rows = out_in_place ? out->data<float>() + offset : out_buffer.data();
          ScaleRows(a_rows, scale, rows, g.channels, out_rows);
          if (!out_in_place) StoreFloat32Block(out_rows, offset, count, *out);
        }
      }
      std::copy(lanes.begin(), lanes.end(), runs.begin() + chunk * run_size);
    }
  });
  // The runs' lanes added in run order, then each sum's lanes totalled in lane order.
  std::vector<float> merged(static_cast<size_t>(run_size), 0.0f);
  for (int64_t chunk = 0; chunk < kBatchChunks; ++chunk) {
    const float* run = runs.data() + chunk * run_size;
    for (int64_t i = 0; i < run_size; ++i) merged[i] += run[i];
  }
  for (int64_t k = 0; k < sums; ++k) {
    float* total = totals[k];
    std::fill_n(total, g.channels, 0.0f);
    for (int64_t lane = 0; lane < kLaneCount; ++lane) {
      const float* lane_sums = merged.data() + (k * kLaneCount + lane) * g.channels;
      for (int64_t c = 0; c < g.channels; ++c) total[c] += lane_sums[c];
    }
  }
}

// Runs rows(first_pixel_row, row_count, out) over the [N * H * W] pixel rows of x in
// parallel chunks, `out` a float32 buffer of row_count * C values to fill (written in
// place for a float32 `y`, else rounded into y afterwards by `store`).
template <typename Rows, typename Store>
void ForEachRowBlock(ThreadPool& threads, const Tensor& x, Tensor& y, const Rows& rows, const Store& store) {
  const Geometry g = GeometryOf(x);
  const int64_t total_rows = g.batch * g.pixels;
  constexpr int64_t kBlockRows = 256;
  const int64_t grain = ItemsPerChunk(g.channels, kMinParallelElements);
  threads.ParallelFor(total_rows, grain, [&](int64_t begin, int64_t end) {
    const bool in_place = y.dtype() == DType::kFloat32;
    std::vector<float> buffer(static_cast<size_t>(in_place ? 0 : std::min(kBlockRows, end - begin) * g.channels));
    for (int64_t row = begin; row < end; row += kBlockRows) {
      const int64_t count = std::min(kBlockRows, end - row);
      float* out = in_place ? y.data<float>() + row * g.channels : buffer.data();
      rows(row, count, out);
      if (!in_place) store(out, row * g.channels, count * g.channels);
    }
  });
}

}  // namespace

void ChannelsLastMeanVar(ThreadPool& threads, const Tensor& x, float* mean, float* var) {
  const Geometry g = GeometryOf(x);
  const float count = static_cast<float>(g.batch * g.pixels);
  ChannelLaneSums(threads, SumKind::kValues, x, nullptr, nullptr, &mean);
  for (int64_t c = 0; c < g.channels; ++c) mean[c] /= count;
  if (var == nullptr) return;
  ChannelLaneSums(threads, SumKind::kSquares, x, nullptr, mean, &var);
  for (int64_t c = 0; c < g.channels; ++c) var[c] /= count;
}

void ChannelsLastNormalize(ThreadPool& threads, const Tensor& x, const float* mean, const float* a, const float* b,
                           const FusedActivation& activation, Tensor& y) {
  const int64_t channels = GeometryOf(x).channels;
  const bool float32_out = y.dtype() == DType::kFloat32;
  ForEachRowBlock(
      threads, x, y,
      [&](int64_t row, int64_t count, float* out) {
        thread_local std::vector<float> widened;
        if (x.dtype() != DType::kFloat32) widened.resize(static_cast<size_t>(count * channels));
        const float* in = Float32BlockOf(x, row * channels, count * channels, widened.data());
        NormalizeRows(in, mean, a, b, count, channels, out);
        // float32: the activation as the NCHW loop applies it to each value; the other
        // dtypes get it as StoreBlockWithActivation applies it, on the rounded values.
        if (float32_out) {
          WithActivationOp(activation, [&](const auto& op) {
            for (int64_t i = 0; i < count * channels; ++i) out[i] = op(out[i]);
          });
        }
      },
      [&](const float* values, int64_t begin, int64_t count) {
        StoreBlockWithActivation(values, y, begin, count, activation);
      });
}

void ChannelsLastGradSums(ThreadPool& threads, const Tensor& dy, const Tensor& x, const float* mean, float* sum_g,
                          float* sum_g_centered, float* squares, const float* dx_scale, Tensor* dx) {
  if (squares == nullptr) {
    float* totals[] = {sum_g, sum_g_centered};
    ChannelLaneSums(threads, SumKind::kGrad, dy, &x, mean, totals, dx_scale, dx);
    return;
  }
  float* totals[] = {squares, sum_g, sum_g_centered};
  ChannelLaneSums(threads, SumKind::kGradSquares, dy, &x, mean, totals, dx_scale, dx);
}

void ChannelsLastGradDx(ThreadPool& threads, const Tensor& dy, const Tensor& x, const ChannelsLastGradCoefficients& k,
                        Tensor& dx) {
  const int64_t channels = GeometryOf(x).channels;
  ForEachRowBlock(
      threads, x, dx,
      [&](int64_t row, int64_t count, float* out) {
        thread_local std::vector<float> g_widened, x_widened;
        const int64_t offset = row * channels, size = count * channels;
        if (dy.dtype() != DType::kFloat32) g_widened.resize(static_cast<size_t>(size));
        if (x.dtype() != DType::kFloat32) x_widened.resize(static_cast<size_t>(size));
        const float* gs = Float32BlockOf(dy, offset, size, g_widened.data());
        const float* xs = Float32BlockOf(x, offset, size, x_widened.data());
        GradRows(gs, xs, k.a, k.mean, k.inv_std, k.mean_g, k.mean_gx, count, channels, out);
      },
      [&](const float* values, int64_t begin, int64_t count) { StoreFloat32Block(values, begin, count, dx); });
}

}  // namespace onnx_amp
