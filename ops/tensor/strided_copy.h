// The copy engines behind most data-movement ops. Transpose, Slice, Expand, Tile,
// Concat, Split, DepthToSpace and SpaceToDepth are all "copy a strided view of one
// buffer into a strided view of another"; Pad's border modes and Resize's nearest mode
// are "copy through one index table per axis". Both copy whole elements of a given
// width, so float16/bfloat16 move bit-exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/tensor.h"

namespace onnx_amp {

class ThreadPool;

// dst[sum(i_k * dst_strides[k])] = src[sum(i_k * src_strides[k])] for every index i of
// `shape`. Strides are in elements and may be zero (broadcast) or negative (reversed).
// Adjacent axes are merged, and a transposition of the two fastest axes runs in tiles.
void StridedCopy(ThreadPool& threads, size_t element_size, const Shape& shape, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst, const std::vector<int64_t>& dst_strides);

// dst (contiguous, shape `dst_shape`)[i] = src (contiguous, shape `src_shape`)[j] with
// j_k = index_maps[k][i_k]; a negative j_k writes `fill` (element_size bytes) instead.
void MappedCopy(ThreadPool& threads, size_t element_size, const Shape& src_shape, const void* src,
                const Shape& dst_shape, const std::vector<std::vector<int64_t>>& index_maps, void* dst,
                const void* fill);

// Fills `count` elements of `element_size` bytes with `value`.
void FillElements(size_t element_size, void* dst, int64_t count, const void* value);

}  // namespace onnx_amp
