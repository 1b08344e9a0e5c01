// External data is found at every depth: sparse initializers, Constants in nested If
// branches, Constants in model-local functions, and training_info graphs. Each comes
// back with its own slice of the data file, and survives a save with external data.
#include <gtest/gtest.h>

#include <string>

#include "runtime/onnx/model_io.h"
#include "tests/onnx/test_util.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::Serialized;

constexpr size_t kDataBytes = 256;

void MakeExternal(onnx::TensorProto* tensor, const std::string& name, const std::string& location, int64_t elements,
                  int offset) {
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto_DataType_FLOAT);
  tensor->add_dims(elements);
  tensor->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  const std::pair<std::string, std::string> entries[] = {
      {"location", location}, {"offset", std::to_string(offset)}, {"length", std::to_string(elements * 4)}};
  for (const auto& [key, value] : entries) {
    onnx::StringStringEntryProto* entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
}

// A Constant node whose value is external.
void AddExternalConstant(onnx::GraphProto* graph, const std::string& name, const std::string& location, int offset) {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("Constant");
  node->set_name(name + "_node");
  node->add_output(name);
  onnx::AttributeProto* value = node->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  MakeExternal(value->mutable_t(), name, location, 4, offset);
}

// If node whose then_branch is `branch`.
onnx::GraphProto* AddIf(onnx::GraphProto* graph, const std::string& name) {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("If");
  node->set_name(name);
  node->add_input("cond");
  node->add_output(name + "_out");
  onnx::AttributeProto* then_branch = node->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto_AttributeType_GRAPH);
  then_branch->mutable_g()->set_name(name + "_then");
  return then_branch->mutable_g();
}

// Tensor name -> offset in data.bin (each holds 4 floats, except the sparse values: 2).
onnx::ModelProto NestedModel(const std::string& deep_location) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("main");

  onnx::SparseTensorProto* sparse = graph->add_sparse_initializer();
  MakeExternal(sparse->mutable_values(), "sparse_values", "data.bin", 2, 128);
  sparse->mutable_indices()->set_name("sparse_indices");
  sparse->mutable_indices()->set_data_type(onnx::TensorProto_DataType_INT64);
  sparse->mutable_indices()->add_dims(2);
  sparse->mutable_indices()->add_int64_data(1);
  sparse->mutable_indices()->add_int64_data(3);
  sparse->add_dims(4);

  onnx::GraphProto* level1 = AddIf(graph, "if1");
  onnx::GraphProto* level2 = AddIf(level1, "if2");
  AddExternalConstant(level2, "deep", deep_location, 192);

  onnx::FunctionProto* function = model.add_functions();
  function->set_name("F");
  function->set_domain("local");
  onnx::GraphProto function_body;  // Functions hold nodes directly; build one and move it.
  AddExternalConstant(&function_body, "function_const", "data.bin", 0);
  function->add_node()->Swap(function_body.mutable_node(0));

  onnx::TrainingInfoProto* training = model.add_training_info();
  training->mutable_initialization()->set_name("init");
  MakeExternal(training->mutable_initialization()->add_initializer(), "training_init", "data.bin", 4, 64);
  return model;
}

std::string DataBytes() {
  std::string bytes(kDataBytes, '\0');
  for (size_t i = 0; i < kDataBytes; ++i) bytes[i] = static_cast<char>(i * 7 + 1);
  return bytes;
}

struct Slices {
  std::string function_const, training_init, sparse_values, deep;
};

Slices Collect(const onnx::ModelProto& model) {
  const onnx::GraphProto& level1 = model.graph().node(0).attribute(0).g();
  const onnx::GraphProto& level2 = level1.node(0).attribute(0).g();
  return Slices{model.functions(0).node(0).attribute(0).t().raw_data(),
                model.training_info(0).initialization().initializer(0).raw_data(),
                model.graph().sparse_initializer(0).values().raw_data(), level2.node(0).attribute(0).t().raw_data()};
}

TEST(NestedExternalDataTest, EveryDepthIsLoaded) {
  testing::TempDir temp;
  const std::string data = DataBytes();
  testing::WriteFile(temp / "data.bin", data);
  testing::WriteFile(temp / "model.onnx", Serialized(NestedModel("data.bin")));

  Expected<onnx::ModelProto> model = LoadModel(temp / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Slices slices = Collect(*model);
  EXPECT_EQ(slices.function_const, data.substr(0, 16));
  EXPECT_EQ(slices.training_init, data.substr(64, 16));
  EXPECT_EQ(slices.sparse_values, data.substr(128, 8));
  EXPECT_EQ(slices.deep, data.substr(192, 16));

  // And the writer finds them all again.
  SaveOptions options;
  options.mode = ExternalData::kAlways;
  options.external_threshold_bytes = 8;
  ASSERT_TRUE(SaveModel(*model, temp / "saved.onnx", options).ok());
  LoadOptions in_place;
  in_place.load_external_data = false;
  Expected<onnx::ModelProto> references = LoadModel(temp / "saved.onnx", in_place);
  ASSERT_TRUE(references.ok()) << references.status().message();
  const Slices empty = Collect(*references);
  EXPECT_TRUE(empty.function_const.empty() && empty.training_init.empty() && empty.sparse_values.empty() &&
              empty.deep.empty());
  Expected<onnx::ModelProto> reloaded = LoadModel(temp / "saved.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().message();
  EXPECT_EQ(Serialized(*reloaded), Serialized(*model));
}

TEST(NestedExternalDataTest, ErrorsNameTheNestedTensor) {
  testing::TempDir temp;
  testing::WriteFile(temp / "data.bin", DataBytes());
  testing::WriteFile(temp / "model.onnx", Serialized(NestedModel("../escape.bin")));
  Expected<onnx::ModelProto> model = LoadModel(temp / "model.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(), (temp / "model.onnx").string() +
                                          ": tensor 'deep': external data location '../escape.bin' points outside "
                                          "the model folder");
}

}  // namespace
}  // namespace onnx_amp
