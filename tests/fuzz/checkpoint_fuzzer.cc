// Fuzzes the checkpoint reader: the input is checkpoint.npz for a trainer of a small
// Gemm classifier (parameters W [4,3] and B [3], Adam: two slots each). A checkpoint
// that loads must leave every weight and slot with its model shape.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <onnx/onnx_pb.h>

#include "runtime/train/checkpoint.h"
#include "runtime/train/trainable_model.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_graph.h"
#include "tests/fuzz/scratch_folder.h"

namespace {

void AddTensorInfo(onnx::ValueInfoProto* info, const std::string& name, std::initializer_list<int64_t> dims) {
  info->set_name(name);
  auto* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) {
    auto* dim = type->mutable_shape()->add_dim();
    if (d < 0) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}

void AddWeight(onnx::GraphProto* graph, const std::string& name, std::initializer_list<int64_t> dims) {
  onnx::TensorProto* init = graph->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) {
    init->add_dims(d);
    count *= d;
  }
  for (int64_t i = 0; i < count; ++i) init->add_float_data(0.1f * static_cast<float>(i));
}

// x [N,4] -> Gemm(W [4,3], B [3]) -> y [N,3].
onnx::ModelProto SmallClassifier() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("classifier");
  AddTensorInfo(graph->add_input(), "x", {-1, 4});
  AddTensorInfo(graph->add_output(), "y", {-1, 3});
  AddWeight(graph, "W", {4, 3});
  AddWeight(graph, "B", {3});
  onnx::NodeProto* gemm = graph->add_node();
  gemm->set_op_type("Gemm");
  gemm->set_name("gemm");
  for (const char* input : {"x", "W", "B"}) gemm->add_input(input);
  gemm->add_output("y");
  return model;
}

onnx_amp::Trainer& SharedTrainer() {
  static onnx_amp::Trainer* trainer = [] {
    const onnx_amp::LossKind loss = onnx_amp::LossKind::kCrossEntropy;
    onnx_amp::Expected<onnx_amp::TrainableModel> trainable = onnx_amp::PrepareTrainableModel(SmallClassifier(), loss);
    if (!trainable.ok()) __builtin_trap();
    onnx_amp::Expected<onnx_amp::TrainingGraph> graph = onnx_amp::BuildTrainingGraph(std::move(*trainable), loss);
    if (!graph.ok()) __builtin_trap();
    onnx_amp::TrainerConfig config;
    config.optimizer.kind = onnx_amp::OptimizerKind::kAdam;
    config.num_threads = 1;
    onnx_amp::Expected<std::unique_ptr<onnx_amp::Trainer>> made = onnx_amp::Trainer::Create(std::move(*graph), config);
    if (!made.ok()) __builtin_trap();
    return made->release();
  }();
  return *trainer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const onnx_amp::fuzz::ScratchFolder folder("onnx-amp-fuzz-checkpoint");
  onnx_amp::Trainer& trainer = SharedTrainer();
  onnx_amp::DataPosition position;
  const auto path = folder.Write("checkpoint.npz", data, size);
  if (!onnx_amp::LoadCheckpoint(path, trainer, position).ok()) return 0;
  const onnx_amp::Shape w_shape = {4, 3};
  const onnx_amp::Shape b_shape = {3};
  for (const onnx_amp::NamedTensor& weight : trainer.weights()) {
    if (weight.tensor.shape() != (weight.name == "W" ? w_shape : b_shape)) __builtin_trap();
  }
  return 0;
}
