#include "ops/common/onednn_utils.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ops/common/converting_relayout.h"
#include "runtime/core/cpu_isa_cap.h"
#include "runtime/core/scratch_buffer.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp::dnn {
namespace {

// Enough for every distinct GEMM/conv problem of a large model; beyond it the map is
// cleared rather than grown without bound (shapes that change every call).
constexpr size_t kMaxCachedPrimitives = 1024;
// Packed copies of one node's weights (one per input shape seen); beyond it they are
// dropped and rebuilt on demand.
constexpr size_t kMaxPackedPerNode = 8;

}  // namespace

namespace {

// ONNX_AMP_MAX_CPU_ISA (runtime/core/cpu_isa_cap.h) caps oneDNN's kernels too, unless
// ONEDNN_MAX_CPU_ISA chose for oneDNN itself. Set before the engine exists, so before
// oneDNN has generated any kernel (afterwards it refuses).
void CapOneDnnIsa() {
  const CpuIsa cap = MaxCpuIsa();
  if (cap == CpuIsa::kAvx512Bf16 || std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr) return;
  const dnnl::cpu_isa isa = cap == CpuIsa::kAvx512 ? dnnl::cpu_isa::avx512_core
                            : cap == CpuIsa::kAvx2  ? dnnl::cpu_isa::avx2
                                                    : dnnl::cpu_isa::sse41;
  try {
    dnnl::set_max_cpu_isa(isa);
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "onnx-amp: oneDNN's kernels are not capped at %s: %s\n", std::string(CpuIsaName(cap)).c_str(),
                 e.what());
  }
}

}  // namespace

bool OneDnnRunsAvx512() {
  static const bool avx512 = [] {
    CpuEngine();  // so that a cap is set before oneDNN reads the CPU
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & core) == core;  // the values are nested bit sets, not an order
  }();
  return avx512;
}

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine = [] {
    CapOneDnnIsa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(CpuEngine());
  return stream;
}

dnnl::memory::data_type DataType(DType dtype) {
  if (dtype == DType::kBFloat16) return dnnl::memory::data_type::bf16;
  return dtype == DType::kFloat16 ? dnnl::memory::data_type::f16 : dnnl::memory::data_type::f32;
}

dnnl::memory::desc WithDataType(const dnnl::memory::desc& md, dnnl::memory::data_type type) {
  dnnl::memory::desc copy = md;
  copy.data.data_type = static_cast<dnnl_data_type_t>(type);
  return copy;
}

dnnl::memory::desc PlainDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory::desc ActivationDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type, bool channels_last) {
  if (!channels_last || dims.size() < 3) return PlainDesc(dims, type);
  // C is innermost, then the spatial dims in order, then N.
  dnnl::memory::dims strides(dims.size());
  dnnl::memory::dim stride = 1;
  strides[1] = stride;
  stride *= dims[1];
  for (size_t i = dims.size() - 1; i >= 2; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
  strides[0] = stride;
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory::desc ChannelBlockedDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  using tag = dnnl::memory::format_tag;
  const tag blocked = dims.size() == 3 ? tag::nCw16c : dims.size() == 4 ? tag::nChw16c : tag::nCdhw16c;
  return dnnl::memory::desc(dims, type, blocked);
}

bool ChannelBlockedIsChannelsLast(const dnnl::memory::dims& dims) {
  return dims.size() >= 3 && dims.size() <= 5 && dims[1] == 16;
}

void PrepareAttr(dnnl::primitive_attr& attr) { attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); }

Expected<std::optional<Primitive>> CachedPrimitive(const std::string& key, double multiply_adds,
                                                   const std::function<std::optional<Primitive>()>& make) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::optional<Primitive>> cache;
  const int threads = multiply_adds < kSerialMultiplyAdds ? 1 : RuntimeThreads();
  const std::string threaded_key = key + "/t" + std::to_string(threads);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(threaded_key);
    if (it != cache.end()) return it->second;
  }
  std::optional<Primitive> primitive;
  try {
    // oneDNN sizes a primitive's work split for the thread count it is built under.
    const RuntimeThreadsScope scope(threads);
    primitive = make();
  } catch (const dnnl::error& e) {
    return Unsupported(std::string("oneDNN cannot build the primitive for ") + key + ": " + e.what());
  }
  if (primitive) primitive->threads = threads;
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  cache.emplace(threaded_key, primitive);
  return primitive;
}

bool IsOptimized(const dnnl::primitive_desc_base& primitive_desc) {
  return std::string_view(primitive_desc.impl_info_str()).substr(0, 3) != "ref";
}

void AddRelayout(Primitive& primitive, int arg, bool output, const dnnl::memory::desc& plain,
                 const dnnl::memory::desc& inner) {
  Relayout relayout{arg, output, plain, inner, std::nullopt};
  if (plain != inner) {
    const dnnl::engine& engine = CpuEngine();
    dnnl::primitive_attr attr;
    PrepareAttr(attr);
    const dnnl::reorder::primitive_desc pd = output ? dnnl::reorder::primitive_desc(engine, inner, engine, plain, attr)
                                                    : dnnl::reorder::primitive_desc(engine, plain, engine, inner, attr);
    primitive.scratchpad_bytes = std::max(primitive.scratchpad_bytes, pd.scratchpad_desc().get_size());
    relayout.reorder = dnnl::reorder(pd);
  }
  primitive.relayouts.push_back(std::move(relayout));
}

void SetInitialOutput(Primitive& primitive, int arg, const dnnl::memory::desc& source, const dnnl::memory::desc& inner) {
  const dnnl::engine& engine = CpuEngine();
  dnnl::primitive_attr attr;
  PrepareAttr(attr);
  const dnnl::reorder::primitive_desc pd(engine, source, engine, inner, attr);
  primitive.scratchpad_bytes = std::max(primitive.scratchpad_bytes, pd.scratchpad_desc().get_size());
  primitive.initial_output = InitialOutput{arg, source, dnnl::reorder(pd)};
}

namespace {

// The primitive's scratchpad on this thread (empty when it needs none).
dnnl::memory ThreadScratchpad(const Primitive& primitive) {
  thread_local ScratchBuffer scratchpad;
  if (primitive.scratchpad_bytes == 0) return dnnl::memory();
  const dnnl::memory::desc scratch_md({static_cast<dnnl::memory::dim>(primitive.scratchpad_bytes)},
                                      dnnl::memory::data_type::u8, dnnl::memory::format_tag::a);
  return dnnl::memory(scratch_md, CpuEngine(), scratchpad.Reserve(primitive.scratchpad_bytes));
}

// Whether an argument given as `given` goes through `relayout` (a reorder, or a
// conversion from or to its low-precision twin), and which.
enum class Move { kNone, kReorder, kConvert };

Move MoveFor(const Relayout& relayout, const dnnl::memory::desc& given) {
  if (given == relayout.plain_md) return relayout.reorder ? Move::kReorder : Move::kNone;
  return WithDataType(given, dnnl::memory::data_type::f32) == relayout.plain_md ? Move::kConvert : Move::kNone;
}

// Moves arguments between the callers' layouts and a primitive's own, on this thread's
// stream with the primitive's scratchpad.
class ArgumentMover {
 public:
  ArgumentMover(const Primitive& primitive, dnnl::stream& stream, dnnl::memory scratch)
      : primitive_(primitive), stream_(stream), scratch_(std::move(scratch)) {}

  void Reorder(const Relayout& relayout, const dnnl::memory& from, const dnnl::memory& to) const {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (scratch_) args.emplace(DNNL_ARG_SCRATCHPAD, scratch_);
    relayout.reorder->execute(stream_, args);
  }

  // Between a low-precision argument and the primitive's float32 one: in one pass where
  // converting_relayout.h can, else converted in the plain layout and reordered.
  void Convert(const Relayout& relayout, const dnnl::memory& from, const dnnl::memory& to) const {
    const dnnl::memory::desc from_md = from.get_desc(), to_md = to.get_desc();
    if (ConvertsBetween(from_md, to_md)) {
      ConvertBetween(from_md, from.get_data_handle(), to_md, to.get_data_handle(), primitive_.threads);
      return;
    }
    thread_local ScratchBuffer wide_buffer;
    char* wide = wide_buffer.Reserve(relayout.plain_md.get_size());
    const dnnl::memory plain(relayout.plain_md, CpuEngine(), wide);
    if (relayout.output) {
      Reorder(relayout, from, plain);
      ConvertBetween(relayout.plain_md, wide, to_md, to.get_data_handle(), primitive_.threads);
    } else {
      ConvertBetween(from_md, from.get_data_handle(), relayout.plain_md, wide, primitive_.threads);
      Reorder(relayout, plain, to);
    }
  }

  void Run(Move move, const Relayout& relayout, const dnnl::memory& from, const dnnl::memory& to) const {
    if (move == Move::kConvert) {
      Convert(relayout, from, to);
    } else {
      Reorder(relayout, from, to);
    }
  }

 private:
  const Primitive& primitive_;
  dnnl::stream& stream_;
  dnnl::memory scratch_;
};

}  // namespace

const Relayout* InputRelayout(const Primitive& primitive, int arg, const dnnl::memory::desc& given) {
  for (const Relayout& relayout : primitive.relayouts) {
    if (relayout.arg == arg && !relayout.output && MoveFor(relayout, given) != Move::kNone) return &relayout;
  }
  return nullptr;
}

Status MoveInput(const Primitive& primitive, int arg, const dnnl::memory::desc& given, const void* data, void* inner) {
  const Relayout* relayout = InputRelayout(primitive, arg, given);
  if (relayout == nullptr) return InternalError("the argument needs no move into the primitive's layout");
  try {
    const dnnl::engine& engine = CpuEngine();
    dnnl::stream& stream = ThreadStream();
    const RuntimeThreadsScope scope(primitive.threads);
    const ArgumentMover mover(primitive, stream, ThreadScratchpad(primitive));
    mover.Run(MoveFor(*relayout, given), *relayout, dnnl::memory(given, engine, const_cast<void*>(data)),
              dnnl::memory(relayout->inner_md, engine, inner));
    stream.wait();
  } catch (const dnnl::error& e) {
    return InternalError(std::string("oneDNN reorder failed: ") + e.what());
  }
  return Status::Ok();
}

Status Execute(const Primitive& primitive,
               const std::unordered_map<int, std::pair<dnnl::memory::desc, const void*>>& args, const void* initial) {
  // One arena per thread for the arguments that move, laid end to end: it grows to the
  // most one primitive moves, where a buffer per argument position grew to the largest
  // argument each position ever saw (a mixed CNN step kept 26 MB where 14 MB do).
  thread_local ScratchBuffer relayout_arena;
  try {
    const dnnl::engine& engine = CpuEngine();
    std::unordered_map<int, dnnl::memory> memories;
    for (const auto& [arg, memory] : args) {
      // oneDNN takes non-const handles; inputs are only read.
      memories.emplace(arg, dnnl::memory(memory.first, engine, const_cast<void*>(memory.second)));
    }
    const dnnl::memory scratch = ThreadScratchpad(primitive);
    if (scratch) memories.emplace(DNNL_ARG_SCRATCHPAD, scratch);
    dnnl::stream& stream = ThreadStream();
    const RuntimeThreadsScope scope(primitive.threads);
    const ArgumentMover mover(primitive, stream, scratch);
    // Arguments passed in their plain layout (or its low-precision twin) move into the
    // primitive's own one.
    struct Moving {
      const Relayout* relayout;
      Move move;
      dnnl::memory* argument;  // in `memories`
      size_t offset;           // in the arena
    };
    std::vector<Moving> moving;
    size_t arena_bytes = 0;
    for (const Relayout& relayout : primitive.relayouts) {
      auto it = memories.find(relayout.arg);
      if (it == memories.end()) continue;
      const Move move = MoveFor(relayout, it->second.get_desc());
      if (move == Move::kNone) continue;
      moving.push_back({&relayout, move, &it->second, arena_bytes});
      constexpr size_t kAlignment = 64;
      arena_bytes += (relayout.inner_md.get_size() + kAlignment - 1) / kAlignment * kAlignment;
    }
    char* arena = moving.empty() ? nullptr : relayout_arena.Reserve(arena_bytes);
    std::vector<std::tuple<const Relayout*, Move, dnnl::memory>> outputs;
    for (const Moving& m : moving) {
      dnnl::memory inner(m.relayout->inner_md, engine, arena + m.offset);
      if (m.relayout->output) {
        outputs.emplace_back(m.relayout, m.move, *m.argument);
      } else {
        mover.Run(m.move, *m.relayout, *m.argument, inner);
      }
      *m.argument = inner;
    }
    if (primitive.initial_output) {
      if (initial == nullptr) return InternalError("the primitive accumulates into an output given no start");
      const InitialOutput& start = *primitive.initial_output;
      const dnnl::memory& output = memories.at(start.arg);
      if (output.get_data_handle() != initial) {
        const dnnl::memory source(start.source_md, engine, const_cast<void*>(initial));
        std::unordered_map<int, dnnl::memory> reorder_args{{DNNL_ARG_FROM, source}, {DNNL_ARG_TO, output}};
        if (scratch) reorder_args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
        start.reorder.execute(stream, reorder_args);
      }
    }
    primitive.primitive.execute(stream, memories);
    for (const auto& [relayout, move, plain] : outputs) mover.Run(move, *relayout, memories.at(relayout->arg), plain);
    stream.wait();
  } catch (const dnnl::error& e) {
    return InternalError(std::string("oneDNN execution failed: ") + e.what());
  }
  return Status::Ok();
}

dnnl::memory PackedWeights::Find(const std::string& key, const void* identity) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.identity == identity ? it->second.packed : dnnl::memory();
}

void PackedWeights::Store(const std::string& key, const void* identity, dnnl::memory packed,
                          std::shared_ptr<Buffer> storage) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() >= kMaxPackedPerNode && !entries_.count(key)) entries_.clear();
  entries_[key] = Entry{identity, std::move(packed), std::move(storage)};
}

PackedWeights* PackedWeightsOf(KernelContext& context, int index) {
  if (!context.input_is_constant(index)) return nullptr;
  std::unique_ptr<KernelState>* state = context.state();
  if (state == nullptr) return nullptr;
  if (!*state) *state = std::make_unique<PackedWeights>();
  // A node's state is only ever made by its own kernel; Conv, Gemm and MatMul make this one.
  return dynamic_cast<PackedWeights*>(state->get());
}

Expected<std::pair<dnnl::memory::desc, const void*>> ResolveWeights(const Primitive& primitive, const std::string& key,
                                                                    const dnnl::memory::desc& plain_md,
                                                                    const WeightsSource& source) {
  if (source.pack_each_call) {
    ONNX_AMP_ASSIGN_OR_RETURN(const void* data, source.pack_each_call(primitive.weights_md));
    return std::make_pair(primitive.weights_md, data);
  }
  if (source.packed == nullptr) return std::make_pair(plain_md, source.plain());
  dnnl::memory packed = source.packed->Find(key, source.identity);
  if (!packed) {
    // Our own buffer rather than oneDNN's allocation: a large one sits on huge pages
    // (Buffer::AllocateCpu), so a run that finds the weights out of cache (batch 1 after
    // a pause) does not also walk the page tables for each 4 KiB of them.
    std::shared_ptr<Buffer> storage;
    try {
      const dnnl::engine& engine = CpuEngine();
      storage = Buffer::AllocateCpu(primitive.weights_md.get_size());
      packed = dnnl::memory(primitive.weights_md, engine, storage->data());
      dnnl::memory plain(plain_md, engine, const_cast<void*>(source.plain()));
      dnnl::stream& stream = ThreadStream();
      dnnl::reorder(plain, packed).execute(stream, plain, packed);
      stream.wait();
    } catch (const dnnl::error& e) {
      return InternalError(std::string("oneDNN cannot reorder the weights for ") + key + ": " + e.what());
    }
    source.packed->Store(key, source.identity, packed, std::move(storage));
  }
  return std::make_pair(primitive.weights_md, static_cast<const void*>(packed.get_data_handle()));
}

std::string DimsKey(const dnnl::memory::dims& dims) {
  std::string key;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) key += 'x';
    key += std::to_string(dims[i]);
  }
  return key;
}

}  // namespace onnx_amp::dnn
