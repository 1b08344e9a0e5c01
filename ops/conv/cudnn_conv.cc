#include "ops/conv/cudnn_conv.h"

#include <cudnn.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ops/common/pointer_alignment.h"

namespace onnx_amp {
namespace {

Status CudnnStatus(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::Ok();
  return InternalError(std::string("cuDNN ") + what + ": " + cudnnGetErrorString(status));
}

#define ONNX_AMP_CUDNN_RETURN_IF_ERROR(call, what) ONNX_AMP_RETURN_IF_ERROR(CudnnStatus((call), (what)))

// An owned backend descriptor.
class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(Descriptor&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Descriptor() {
    if (handle_ != nullptr) cudnnBackendDestroyDescriptor(handle_);
  }
  static Expected<Descriptor> Create(cudnnBackendDescriptorType_t type) {
    Descriptor descriptor;
    ONNX_AMP_CUDNN_RETURN_IF_ERROR(cudnnBackendCreateDescriptor(type, &descriptor.handle_), "create descriptor");
    return descriptor;
  }
  cudnnBackendDescriptor_t get() const { return handle_; }
  cudnnBackendDescriptor_t* address() { return &handle_; }

  template <typename T>
  Status Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, int64_t count) {
    return CudnnStatus(cudnnBackendSetAttribute(handle_, name, type, count, values), "set attribute");
  }
  Status Finalize() { return CudnnStatus(cudnnBackendFinalize(handle_), "finalize"); }

 private:
  cudnnBackendDescriptor_t handle_ = nullptr;
};

cudnnDataType_t CudnnType(DType dtype) {
  if (dtype == DType::kFloat16) return CUDNN_DATA_HALF;
  if (dtype == DType::kBFloat16) return CUDNN_DATA_BFLOAT16;
  return CUDNN_DATA_FLOAT;
}

enum TensorId : int64_t { kX = 1, kW = 2, kY = 3 };

Expected<Descriptor> TensorDescriptor(TensorId id, DType dtype, const std::vector<int64_t>& dims, int64_t alignment) {
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor tensor, Descriptor::Create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  const cudnnDataType_t type = CudnnType(dtype);
  const int64_t uid = id;
  ONNX_AMP_RETURN_IF_ERROR(tensor.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type, 1));
  ONNX_AMP_RETURN_IF_ERROR(
      tensor.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), static_cast<int64_t>(dims.size())));
  ONNX_AMP_RETURN_IF_ERROR(
      tensor.Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), static_cast<int64_t>(strides.size())));
  ONNX_AMP_RETURN_IF_ERROR(tensor.Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid, 1));
  ONNX_AMP_RETURN_IF_ERROR(tensor.Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment, 1));
  ONNX_AMP_RETURN_IF_ERROR(tensor.Finalize());
  return tensor;
}

// cuDNN takes 4-D and 5-D tensors: a 1-D convolution gets a unit spatial dim.
ConvKey Promoted(ConvKey key) {
  if (key.x_dims.size() != 3) return key;
  for (std::vector<int64_t>* dims : {&key.x_dims, &key.w_dims, &key.y_dims}) dims->push_back(1);
  key.pads_begin.push_back(0);
  key.pads_end.push_back(0);
  key.strides.push_back(1);
  key.dilations.push_back(1);
  return key;
}

// Everything a plan refers to stays alive with it.
struct ConvPlan {
  std::vector<Descriptor> parts;
  Descriptor plan;
  int64_t workspace = 0;
};

class ConvPlanCache final : public CudaDeviceCache {
 public:
  std::mutex mutex;
  std::unordered_map<ConvKey, std::unique_ptr<ConvPlan>, ConvKeyHash> plans;
};

Expected<Descriptor> OperationGraph(cudnnHandle_t handle, const ConvKey& key, std::vector<Descriptor>& parts) {
  const int64_t spatial = static_cast<int64_t>(key.x_dims.size()) - 2;
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor x, TensorDescriptor(kX, key.dtype, key.x_dims, key.alignment));
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor w, TensorDescriptor(kW, key.dtype, key.w_dims, key.alignment));
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor y, TensorDescriptor(kY, key.dtype, key.y_dims, key.alignment));
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor conv, Descriptor::Create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute, 1));
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode, 1));
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial, 1));
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, key.dilations.data(), spatial));
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, key.strides.data(), spatial));
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, key.pads_begin.data(), spatial));
  ONNX_AMP_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, key.pads_end.data(), spatial));
  ONNX_AMP_RETURN_IF_ERROR(conv.Finalize());

  cudnnBackendDescriptorType_t op_type = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
  cudnnBackendAttributeName_t names[6] = {
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  if (key.direction == ConvDirection::kBackwardData) {
    op_type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
    names[0] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX;
    names[1] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
    names[2] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY;
    names[3] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
    names[4] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA;
    names[5] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA;
  } else if (key.direction == ConvDirection::kBackwardFilter) {
    op_type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
    names[0] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X;
    names[1] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
    names[2] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY;
    names[3] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
    names[4] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA;
    names[5] = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor op, Descriptor::Create(op_type));
  const float alpha = 1.0f, beta = 0.0f;
  ONNX_AMP_RETURN_IF_ERROR(op.Set(names[0], CUDNN_TYPE_BACKEND_DESCRIPTOR, x.address(), 1));
  ONNX_AMP_RETURN_IF_ERROR(op.Set(names[1], CUDNN_TYPE_BACKEND_DESCRIPTOR, w.address(), 1));
  ONNX_AMP_RETURN_IF_ERROR(op.Set(names[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, y.address(), 1));
  ONNX_AMP_RETURN_IF_ERROR(op.Set(names[3], CUDNN_TYPE_BACKEND_DESCRIPTOR, conv.address(), 1));
  ONNX_AMP_RETURN_IF_ERROR(op.Set(names[4], CUDNN_TYPE_FLOAT, &alpha, 1));
  ONNX_AMP_RETURN_IF_ERROR(op.Set(names[5], CUDNN_TYPE_FLOAT, &beta, 1));
  ONNX_AMP_RETURN_IF_ERROR(op.Finalize());

  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor graph, Descriptor::Create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  ONNX_AMP_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, op.address(), 1));
  // cuDNN 9.19 deprecates the handle attributes in favour of device-property
  // descriptors; earlier 9.x releases need them, and 9.19 still honours them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ONNX_AMP_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle, 1));
#pragma GCC diagnostic pop
  ONNX_AMP_RETURN_IF_ERROR(graph.Finalize());
  for (Descriptor* part : {&x, &w, &y, &conv, &op}) parts.push_back(std::move(*part));
  return graph;
}

// Whether the engine of `config` runs on Tensor Cores (TF32 for float32 data).
Expected<bool> UsesTensorCores(const Descriptor& config) {
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor engine, Descriptor::Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  int64_t count = 0;
  ONNX_AMP_CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, engine.address()),
                                 "engine of a configuration");
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  ONNX_AMP_CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                          CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                                          &count, notes),
                                 "numerical notes");
  for (int64_t i = 0; i < count; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) return true;
  }
  return false;
}

// The first engine configuration of `mode` that finalizes into a plan (and, for float32
// without TF32, does not use Tensor Cores).
Expected<std::unique_ptr<ConvPlan>> PlanWithHeuristic(cudnnHandle_t handle, const ConvKey& key, Descriptor& graph,
                                                      cudnnBackendHeurMode_t mode) {
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor heuristic, Descriptor::Create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  ONNX_AMP_RETURN_IF_ERROR(
      heuristic.Set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, graph.address(), 1));
  ONNX_AMP_RETURN_IF_ERROR(heuristic.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode, 1));
  ONNX_AMP_RETURN_IF_ERROR(heuristic.Finalize());
  int64_t count = 0;
  ONNX_AMP_CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                                 "heuristic result count");
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    ONNX_AMP_ASSIGN_OR_RETURN(Descriptor config, Descriptor::Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(config.get());
    configs.push_back(std::move(config));
  }
  int64_t returned = 0;
  if (count > 0) {
    ONNX_AMP_CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()),
                                   "heuristic results");
  }
  const bool forbid_tensor_cores = key.dtype == DType::kFloat32 && !key.tf32;
  for (int64_t i = 0; i < returned; ++i) {
    if (forbid_tensor_cores) {
      Expected<bool> tensor_cores = UsesTensorCores(configs[i]);
      if (!tensor_cores.ok() || *tensor_cores) continue;
    }
    auto plan = std::make_unique<ConvPlan>();
    ONNX_AMP_ASSIGN_OR_RETURN(plan->plan, Descriptor::Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    ONNX_AMP_RETURN_IF_ERROR(plan->plan.Set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle, 1));
#pragma GCC diagnostic pop
    ONNX_AMP_RETURN_IF_ERROR(
        plan->plan.Set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, configs[i].address(), 1));
    if (cudnnBackendFinalize(plan->plan.get()) != CUDNN_STATUS_SUCCESS) continue;
    ONNX_AMP_CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                            CUDNN_TYPE_INT64, 1, &count, &plan->workspace),
                                   "workspace size");
    plan->parts.push_back(std::move(configs[i]));
    return plan;
  }
  return std::unique_ptr<ConvPlan>();
}

Expected<std::unique_ptr<ConvPlan>> MakePlan(cudnnHandle_t handle, const ConvKey& key) {
  std::vector<Descriptor> parts;
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor graph, OperationGraph(handle, key, parts));
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<ConvPlan> plan, PlanWithHeuristic(handle, key, graph, mode));
    if (!plan) continue;
    for (Descriptor& part : parts) plan->parts.push_back(std::move(part));
    plan->parts.push_back(std::move(graph));
    return plan;
  }
  return Unsupported("cuDNN has no engine for the convolution " + key.ToString());
}

}  // namespace

Status RunCudnnConv(CudaDevice& device, ConvKey key, void* x, void* w, void* y) {
  key.tf32 = key.dtype == DType::kFloat32 && device.allow_tf32();
  key.alignment = CommonAlignment({x, w, y});
  key = Promoted(std::move(key));
  ONNX_AMP_ASSIGN_OR_RETURN(cudnnHandle_t handle, device.cudnn());
  ConvPlanCache& cache = device.Cache<ConvPlanCache>();
  ConvPlan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.plans.find(key);
    if (it == cache.plans.end()) {
      ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<ConvPlan> made, MakePlan(handle, key));
      it = cache.plans.emplace(key, std::move(made)).first;
    }
    plan = it->second.get();
  }
  void* workspace = nullptr;
  if (plan->workspace > 0) {
    ONNX_AMP_ASSIGN_OR_RETURN(workspace, device.Workspace(static_cast<size_t>(plan->workspace)));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Descriptor pack, Descriptor::Create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  void* pointers[] = {x, w, y};
  const int64_t ids[] = {kX, kW, kY};
  ONNX_AMP_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers, 3));
  ONNX_AMP_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, ids, 3));
  ONNX_AMP_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace, 1));
  ONNX_AMP_RETURN_IF_ERROR(pack.Finalize());
  return CudnnStatus(cudnnBackendExecute(handle, plan->plan.get(), pack.get()), "execute convolution");
}

}  // namespace onnx_amp
