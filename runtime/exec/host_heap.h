#pragma once

// The C library's heap, where it is glibc's: what the runtime and its programs ask of it.
// Both do nothing with another C library or under AddressSanitizer, whose allocator
// replaces glibc's.

namespace onnx_amp {

// Gives the heap's freed pages back to the system (before a large block is mapped, so
// that the two do not count twice in the peak).
void ReturnFreedHeapPages();

// Fixes the heap's thresholds for a whole program; call it first thing in main. glibc
// raises its mmap threshold to the largest block freed so far, after which large blocks
// come from the heap, whose freed space it keeps: a training step's peak then depended on
// the order of its frees (331 or 351 MiB for the same step). A fixed 1 MiB threshold maps
// every large block, and a high trim threshold keeps the small blocks' heap from being
// handed back and faulted in again on every step (which cost convolution steps 7-12%).
// Returns whether the C library took them.
bool FixHeapThresholds();

}  // namespace onnx_amp
