// Limits on sizes that come from untrusted input (models, tensor files, datasets, flags),
// in one place. Each is checked where the size enters, before anything is allocated, so
// a hostile or corrupt file gets an error naming it instead of an overflow or an
// out-of-memory kill. README "Security and limits" lists them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "runtime/core/status.h"

namespace onnx_amp {

// Dimensions of one tensor (ONNX sets none; real models stay under 10).
inline constexpr int64_t kMaxTensorRank = 64;
// Elements of one tensor: 2^40, far beyond any memory, but it keeps every byte count
// (elements x 16 bytes at most) inside 64 bits.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
// A .npy header (NumPy itself writes under 100 bytes and reads at most 10,000).
inline constexpr size_t kMaxNpyHeaderBytes = size_t{1} << 20;
// An external data location (a relative path; PATH_MAX on Linux).
inline constexpr size_t kMaxExternalLocationBytes = 4096;
// If/Loop/Scan bodies nested in one another.
inline constexpr int kMaxSubgraphDepth = 32;

// The element count of a tensor with these dims, or InvalidArgument ("<what>: ...") for a
// negative dim, a rank over kMaxTensorRank or a count over kMaxTensorElements.
Expected<int64_t> CheckedElementCount(std::span<const int64_t> dims, std::string_view what);

// This machine's physical memory: the default cap on what one run may allocate, and the
// largest tensor or dataset a file may make us allocate.
size_t PhysicalMemoryBytes();

// Unsupported ("<what> needs N bytes, more than the M bytes <cap_name> allows") when
// bytes > cap.
Status CheckMemoryCap(size_t bytes, size_t cap, const std::string& what, const std::string& cap_name);

// Parses a byte count with an optional K, M, G or T suffix (powers of 1024): "512M".
Expected<size_t> ParseByteSize(const std::string& text, const std::string& flag);

}  // namespace onnx_amp
