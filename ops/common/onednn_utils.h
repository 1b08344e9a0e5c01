// Shared oneDNN plumbing for the MatMul/Gemm/Einsum and Conv kernels: one CPU engine,
// a stream per thread, a bounded cache of primitives keyed by problem (shape, dtype,
// attributes) so repeated calls skip primitive creation, constant weights kept in the
// primitive's preferred layout per node, and the conversion of oneDNN's exceptions into
// Status at this boundary.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp::dnn {

const dnnl::engine& CpuEngine();
// Whether oneDNN runs its AVX-512 kernels here (the CPU has them and no cap holds it below;
// runtime/core/cpu_isa_cap.h): its matmuls are then brgemm ones, which read A in place,
// where its AVX2 ones pack A again on every call.
bool OneDnnRunsAvx512();
// oneDNN streams are not thread-safe; each calling thread gets its own.
dnnl::stream& ThreadStream();

// oneDNN's type of a float32, float16 or bfloat16 tensor.
dnnl::memory::data_type DataType(DType dtype);

// `md` with its data type replaced (the same dims and element order).
dnnl::memory::desc WithDataType(const dnnl::memory::desc& md, dnnl::memory::data_type type);

// A dense row-major descriptor.
dnnl::memory::desc PlainDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type);
// A dense [N, C, spatial...] descriptor stored channels-last ([N, spatial..., C]), or the
// row-major one when `channels_last` is false.
dnnl::memory::desc ActivationDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type, bool channels_last);
// oneDNN's 16-channel-blocked layout of [N, C, spatial...] (nChw16c and its 1-D and 3-D
// kin). With exactly 16 channels it holds the bytes of the channels-last layout; its
// direct convolution kernels then read and write channels-last tensors as they are.
dnnl::memory::desc ChannelBlockedDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type);
bool ChannelBlockedIsChannelsLast(const dnnl::memory::dims& dims);

// An argument a primitive takes in a layout of its own choosing (format_tag::any, for
// instance the channel-blocked layouts of oneDNN's direct convolutions) while callers
// pass it dense row-major: Execute reorders it through a per-thread buffer before the
// primitive runs (an input) or after it (an output). A caller may also pass a float32
// argument as float16/bfloat16 in the same order: Execute then widens it into the
// primitive's layout (or rounds the primitive's float32 output into it), in one pass
// where converting_relayout.h can (converting and relayout in one step).
struct Relayout {
  int arg = 0;
  bool output = false;
  dnnl::memory::desc plain_md, inner_md;
  std::optional<dnnl::reorder> reorder;  // plain -> inner for an input, inner -> plain for an
                                         // output; none when the two layouts are the same
};

// The starting contents of an output the primitive accumulates into (a sum post-op): a
// reorder from the caller's tensor (any dtype and layout) into the memory the primitive
// writes, run before it.
struct InitialOutput {
  int arg = 0;
  dnnl::memory::desc source_md;
  dnnl::reorder reorder;
};

// A primitive with its scratchpad size. Primitives are built with a user-managed
// scratchpad, so one cached primitive can run on several threads at once (each call
// brings its own scratch memory).
struct Primitive {
  dnnl::primitive primitive;
  size_t scratchpad_bytes = 0;
  dnnl::memory::desc weights_md;  // the layout the primitive reads its weights in
  int threads = 1;                // built for and run on this many threads
  std::vector<Relayout> relayouts;
  std::optional<InitialOutput> initial_output;
};

// Records that `primitive` takes argument `arg` as `inner` while callers pass `plain`
// (or its float16/bfloat16 twin).
void AddRelayout(Primitive& primitive, int arg, bool output, const dnnl::memory::desc& plain,
                 const dnnl::memory::desc& inner);

// Records that `primitive` starts output `arg` (in its own layout `inner`) from a caller's
// tensor described by `source` (Execute's `initial` argument).
void SetInitialOutput(Primitive& primitive, int arg, const dnnl::memory::desc& source, const dnnl::memory::desc& inner);

// One node's constant weights, reordered once per primitive into the layout that
// primitive prefers (format_tag::any), so later runs skip the reorder (and, for
// float16, the widening to float32).
class PackedWeights final : public KernelState {
 public:
  // The weights packed for primitive `key` from the tensor data at `identity`; a null
  // handle when there are none yet.
  dnnl::memory Find(const std::string& key, const void* identity) const;
  // `storage` holds `packed`'s data (a Buffer, so large weights sit on huge pages).
  void Store(const std::string& key, const void* identity, dnnl::memory packed, std::shared_ptr<Buffer> storage);

 private:
  struct Entry {
    const void* identity;
    dnnl::memory packed;
    std::shared_ptr<Buffer> storage;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

// The node's packed-weights cache when its input `index` is constant and the caller
// keeps node state; nullptr otherwise (the weights are then read as they are).
PackedWeights* PackedWeightsOf(KernelContext& context, int index);

// Where a primitive's weights come from.
struct WeightsSource {
  std::function<const void*()> plain;  // row-major, in the operand type; made on demand
  PackedWeights* packed = nullptr;     // constant weights: build the primitive with
                                       // format_tag::any weights and reorder them once
  const void* identity = nullptr;      // the constant tensor's data (other data re-packs)
  // Weights that change from call to call but are worth packing on each (a large B,
  // matmul_problem.h's RunRelaidMatMul): the primitive is built with format_tag::any
  // weights, and this returns them in its layout, kept alive until the call returns.
  // Takes precedence over `packed`; `plain` may then be empty.
  std::function<Expected<const void*>(const dnnl::memory::desc& layout)> pack_each_call = {};
};

// The weights argument for `primitive` (cached as `key`): the plain data as is, or
// the packed copy, reordered from (plain_md, source.plain()) on first use, or what
// source.pack_each_call makes.
Expected<std::pair<dnnl::memory::desc, const void*>> ResolveWeights(const Primitive& primitive, const std::string& key,
                                                                    const dnnl::memory::desc& plain_md,
                                                                    const WeightsSource& source);

// Sets the attributes every cached primitive needs (user scratchpad).
void PrepareAttr(dnnl::primitive_attr& attr);

// Wraps a primitive descriptor built with PrepareAttr's attributes.
template <typename PrimitiveType, typename PrimitiveDesc>
Primitive MakePrimitive(const PrimitiveDesc& pd);

// Looks up `key`; on a miss calls make(), which returns the primitive or nullopt when
// the problem has no optimised implementation (the reference loop is too slow to use),
// and stores the answer either way. oneDNN errors come back as Unsupported. A problem
// of fewer than kSerialMultiplyAdds multiply-adds (`multiply_adds`) is built for, and
// runs on, one thread; larger ones on the calling thread's runtime thread count
// (RuntimeThreadsScope), which is part of the key.
Expected<std::optional<Primitive>> CachedPrimitive(const std::string& key, double multiply_adds,
                                                   const std::function<std::optional<Primitive>()>& make);

// Splitting a smaller problem over threads saves less than waking the second thread
// costs (and on a loaded machine that wake-up can take a scheduler slice, which made
// batch-1 runs of the bundled CNN 100x slower now and then).
inline constexpr double kSerialMultiplyAdds = 2e6;

// True when oneDNN picked an ISA-specific implementation rather than its reference loop.
bool IsOptimized(const dnnl::primitive_desc_base& primitive_desc);

// Runs the primitive on this thread's stream with this thread's scratchpad and waits.
// Memory objects are created here from (descriptor, pointer) pairs; an argument given
// in its Relayout's plain layout goes through that reorder, one given as its
// float16/bfloat16 twin through the conversion. `initial` is the data of the
// primitive's InitialOutput, when it has one; `initial` at the very address the primitive
// writes that output to is taken to hold it already (the caller computes in place over
// it, in that layout), and is not copied.
Status Execute(const Primitive& primitive,
               const std::unordered_map<int, std::pair<dnnl::memory::desc, const void*>>& args,
               const void* initial = nullptr);

// For a caller passing one tensor to two primitives that read it in the same layout:
// InputRelayout is the relayout Execute would run on input `arg` given as `given`
// (nullptr when it would pass it as it is), and MoveInput runs that move on its own into
// `inner` (sized for the relayout's inner_md). Passing (inner_md, inner) to both then
// moves the tensor once.
const Relayout* InputRelayout(const Primitive& primitive, int arg, const dnnl::memory::desc& given);
Status MoveInput(const Primitive& primitive, int arg, const dnnl::memory::desc& given, const void* data, void* inner);

template <typename PrimitiveType, typename PrimitiveDesc>
Primitive MakePrimitive(const PrimitiveDesc& pd) {
  return Primitive{PrimitiveType(pd), pd.scratchpad_desc().get_size(), pd.weights_desc(), 1, {}, std::nullopt};
}

// A key fragment for dims ("2x3x4").
std::string DimsKey(const dnnl::memory::dims& dims);

}  // namespace onnx_amp::dnn
