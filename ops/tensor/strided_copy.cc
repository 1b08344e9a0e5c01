#include "ops/tensor/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/status.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Elements per parallel task: below this, threading costs more than it saves.
constexpr int64_t kElementsPerTask = 32 * 1024;
// Edge of the square tiles of a transposing copy (32x32 elements stay in L1).
constexpr int64_t kTile = 32;

struct Axis {
  int64_t size;
  int64_t src;
  int64_t dst;
};

// Drops size-1 axes and merges neighbours that are contiguous in both views. Returns
// false when the copy is empty.
bool SimplifyAxes(const Shape& shape, const std::vector<int64_t>& src_strides,
                  const std::vector<int64_t>& dst_strides, std::vector<Axis>& axes) {
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) return false;
    if (shape[k] == 1) continue;
    const Axis axis{shape[k], src_strides[k], dst_strides[k]};
    if (!axes.empty()) {
      Axis& outer = axes.back();
      if (outer.src == axis.src * axis.size && outer.dst == axis.dst * axis.size) {
        outer = {outer.size * axis.size, axis.src, axis.dst};
        continue;
      }
    }
    axes.push_back(axis);
  }
  return true;
}

// Walks the first `outer_count` axes in row-major order, tracking both offsets.
class Odometer {
 public:
  Odometer(const std::vector<Axis>& axes, size_t outer_count, int64_t start)
      : axes_(axes), index_(outer_count, 0) {
    for (size_t k = outer_count; k-- > 0;) {
      index_[k] = start % axes_[k].size;
      start /= axes_[k].size;
      src_ += index_[k] * axes_[k].src;
      dst_ += index_[k] * axes_[k].dst;
    }
  }
  int64_t src() const { return src_; }
  int64_t dst() const { return dst_; }
  void Next() {
    for (size_t k = index_.size(); k-- > 0;) {
      src_ += axes_[k].src;
      dst_ += axes_[k].dst;
      if (++index_[k] < axes_[k].size) return;
      src_ -= axes_[k].src * axes_[k].size;
      dst_ -= axes_[k].dst * axes_[k].size;
      index_[k] = 0;
    }
  }

 private:
  const std::vector<Axis>& axes_;
  std::vector<int64_t> index_;
  int64_t src_ = 0;
  int64_t dst_ = 0;
};

template <typename T>
void CopyRows(ThreadPool& threads, const std::vector<Axis>& axes, const T* src, T* dst) {
  const Axis inner = axes.back();
  const size_t outer_count = axes.size() - 1;
  int64_t rows = 1;
  for (size_t k = 0; k < outer_count; ++k) rows *= axes[k].size;
  const int64_t grain = std::max<int64_t>(1, kElementsPerTask / inner.size);
  threads.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    Odometer position(axes, outer_count, begin);
    for (int64_t row = begin; row < end; ++row, position.Next()) {
      const T* s = src + position.src();
      T* d = dst + position.dst();
      if (inner.src == 1 && inner.dst == 1) {
        std::memcpy(d, s, static_cast<size_t>(inner.size) * sizeof(T));
      } else {
        for (int64_t i = 0; i < inner.size; ++i) d[i * inner.dst] = s[i * inner.src];
      }
    }
  });
}

// The fastest destination axis reads with a large stride while axis `t` reads with
// stride 1: copy in square tiles so both sides stay in cache.
template <typename T>
void CopyTransposedTiles(ThreadPool& threads, std::vector<Axis> axes, size_t t, const T* src, T* dst) {
  const Axis rows_axis = axes[t];
  const Axis cols_axis = axes.back();
  axes.erase(axes.begin() + static_cast<int64_t>(t));
  axes.pop_back();
  int64_t outer = 1;
  for (const Axis& axis : axes) outer *= axis.size;
  const int64_t row_tiles = (rows_axis.size + kTile - 1) / kTile;
  const int64_t col_tiles = (cols_axis.size + kTile - 1) / kTile;
  const int64_t units = outer * row_tiles * col_tiles;
  const int64_t grain = std::max<int64_t>(1, kElementsPerTask / (kTile * kTile));
  threads.ParallelFor(units, grain, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t col_tile = unit % col_tiles;
      const int64_t row_tile = (unit / col_tiles) % row_tiles;
      int64_t rest = unit / (col_tiles * row_tiles);
      int64_t src_base = 0;
      int64_t dst_base = 0;
      for (size_t k = axes.size(); k-- > 0;) {
        const int64_t i = rest % axes[k].size;
        rest /= axes[k].size;
        src_base += i * axes[k].src;
        dst_base += i * axes[k].dst;
      }
      const int64_t r0 = row_tile * kTile;
      const int64_t r1 = std::min(rows_axis.size, r0 + kTile);
      const int64_t c0 = col_tile * kTile;
      const int64_t c1 = std::min(cols_axis.size, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        const T* s = src + src_base + r * rows_axis.src;
        T* d = dst + dst_base + r * rows_axis.dst;
        for (int64_t c = c0; c < c1; ++c) d[c] = s[c * cols_axis.src];
      }
    }
  });
}

template <typename T>
void StridedCopyTyped(ThreadPool& threads, const std::vector<Axis>& axes, const T* src, T* dst) {
  if (axes.empty()) {
    *dst = *src;
    return;
  }
  const Axis& inner = axes.back();
  if (inner.dst == 1 && inner.src != 1 && inner.src != 0 && inner.size >= kTile / 2) {
    for (size_t t = 0; t + 1 < axes.size(); ++t) {
      if (axes[t].src == 1 && axes[t].size >= kTile / 2) {
        CopyTransposedTiles(threads, axes, t, src, dst);
        return;
      }
    }
  }
  CopyRows(threads, axes, src, dst);
}

template <typename T>
void MappedCopyTyped(ThreadPool& threads, const Shape& src_shape, const T* src, const Shape& dst_shape,
                     const std::vector<std::vector<int64_t>>& maps, T* dst, T fill) {
  const size_t rank = dst_shape.size();
  if (rank == 0) {
    *dst = *src;
    return;
  }
  for (int64_t d : dst_shape) {
    if (d == 0) return;
  }
  std::vector<int64_t> src_strides(rank, 1);
  for (size_t k = rank - 1; k-- > 0;) src_strides[k] = src_strides[k + 1] * src_shape[k + 1];
  const int64_t inner = dst_shape.back();
  const std::vector<int64_t>& inner_map = maps.back();
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < rank; ++k) rows *= dst_shape[k];
  const int64_t grain = std::max<int64_t>(1, kElementsPerTask / inner);
  threads.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      T* d = dst + row * inner;
      int64_t src_base = 0;
      bool filled = false;
      int64_t rest = row;
      for (size_t k = rank - 1; k-- > 0;) {
        const int64_t j = maps[k][rest % dst_shape[k]];
        rest /= dst_shape[k];
        if (j < 0) filled = true;
        src_base += j * src_strides[k];
      }
      if (filled) {
        std::fill(d, d + inner, fill);
        continue;
      }
      const T* s = src + src_base;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t j = inner_map[i];
        d[i] = j < 0 ? fill : s[j];
      }
    }
  });
}

}  // namespace

void StridedCopy(ThreadPool& threads, size_t element_size, const Shape& shape, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst, const std::vector<int64_t>& dst_strides) {
  ONNX_AMP_ASSERT(src_strides.size() == shape.size() && dst_strides.size() == shape.size(),
                  "one stride per axis");
  std::vector<Axis> axes;
  if (!SimplifyAxes(shape, src_strides, dst_strides, axes)) return;
  switch (element_size) {
    case 1: StridedCopyTyped(threads, axes, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst)); return;
    case 2: StridedCopyTyped(threads, axes, static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst)); return;
    case 4: StridedCopyTyped(threads, axes, static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst)); return;
    case 8: StridedCopyTyped(threads, axes, static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst)); return;
  }
  ONNX_AMP_ASSERT(false, "element size must be 1, 2, 4 or 8 bytes");
}

void MappedCopy(ThreadPool& threads, size_t element_size, const Shape& src_shape, const void* src,
                const Shape& dst_shape, const std::vector<std::vector<int64_t>>& index_maps, void* dst,
                const void* fill) {
  ONNX_AMP_ASSERT(src_shape.size() == dst_shape.size() && index_maps.size() == dst_shape.size(),
                  "one index map per axis");
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T fill_value = zero;
    if (fill != nullptr) std::memcpy(&fill_value, fill, sizeof(T));
    MappedCopyTyped(threads, src_shape, static_cast<const T*>(src), dst_shape, index_maps, static_cast<T*>(dst),
                    fill_value);
  };
  switch (element_size) {
    case 1: run(uint8_t{0}); return;
    case 2: run(uint16_t{0}); return;
    case 4: run(uint32_t{0}); return;
    case 8: run(uint64_t{0}); return;
  }
  ONNX_AMP_ASSERT(false, "element size must be 1, 2, 4 or 8 bytes");
}

void FillElements(size_t element_size, void* dst, int64_t count, const void* value) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, value, sizeof(T));
    std::fill(static_cast<T*>(dst), static_cast<T*>(dst) + count, v);
  };
  switch (element_size) {
    case 1: run(uint8_t{0}); return;
    case 2: run(uint16_t{0}); return;
    case 4: run(uint32_t{0}); return;
    case 8: run(uint64_t{0}); return;
  }
  ONNX_AMP_ASSERT(false, "element size must be 1, 2, 4 or 8 bytes");
}

}  // namespace onnx_amp
