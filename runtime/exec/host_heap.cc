#include "runtime/exec/host_heap.h"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__SANITIZE_ADDRESS__)
#define ONNX_AMP_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNX_AMP_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__GLIBC__) && !defined(ONNX_AMP_ADDRESS_SANITIZER)
#define ONNX_AMP_GLIBC_HEAP 1
#include <malloc.h>
#endif

namespace onnx_amp {

void ReturnFreedHeapPages() {
#ifdef ONNX_AMP_GLIBC_HEAP
  malloc_trim(0);
#endif
}

bool FixHeapThresholds() {
#ifdef ONNX_AMP_GLIBC_HEAP
  return mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
#else
  return false;
#endif
}

}  // namespace onnx_amp
