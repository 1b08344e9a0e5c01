// Fuzzes `run` on small random graphs: the input is a recipe (graph inputs of random
// dtype and shape, then a chain of nodes picked from a table of ops with random operands,
// attributes and constant inputs, an If with two branches among them) and the seed of
// the input values (NaN and inf included). The executor must return a result or an
// error, within its memory cap, for any recipe.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using onnx_amp::fuzz::FuzzInput;

constexpr size_t kMemoryCapBytes = size_t{64} << 20;
constexpr int kMaxNodes = 12;

const char* const kUnary[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Reciprocal",
                              "Identity", "Floor", "Softplus", "IsNaN", "Not", "Shape", "Size", "NonZero"};
const char* const kBinary[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "MatMul", "Greater", "Equal", "And"};
const int32_t kCastTypes[] = {onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16,
                              onnx::TensorProto::DOUBLE, onnx::TensorProto::INT64, onnx::TensorProto::BOOL};

class GraphRecipe {
 public:
  GraphRecipe(FuzzInput& in, onnx::GraphProto& graph) : in_(in), graph_(graph) {}

  void AddInput(int index) {
    onnx::ValueInfoProto* input = graph_.add_input();
    input->set_name("x" + std::to_string(index));
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(in_.Pick(kCastTypes));
    const int64_t rank = in_.Int(0, 4);
    for (int64_t d = 0; d < rank; ++d) type->mutable_shape()->add_dim()->set_dim_value(in_.Int(0, 4));
    values_.push_back(input->name());
  }

  // Every read of the input is its own statement: the order in which a compiler evaluates
  // function arguments is unspecified (clang goes left to right, g++ right to left), and an
  // input must describe the same graph in the fuzzing build and the replay build. The reads
  // follow clang's order, so inputs found by the fuzzer replay as they were found.
  void AddNode() {
    switch (in_.Int(0, 14)) {
      case 0: {
        const char* op = in_.Pick(kUnary);
        Node(op, {Operand()});
        break;
      }
      case 1: {
        const char* op = in_.Pick(kBinary);
        Node(op, {Operand(), Operand()});
        break;
      }
      case 2: {
        const char* op = in_.Bool() ? "Softmax" : "LogSoftmax";
        onnx::NodeProto* node = Node(op, {Operand()});
        SetInt(node, "axis", in_.Int(-5, 4));
        break;
      }
      case 3: {
        const std::string data = Operand();
        const int64_t rank = in_.Int(0, 4);
        Node("Reshape", {data, Ints(rank, -2, 9)});
        break;
      }
      case 4: {
        onnx::NodeProto* node = Node("Transpose", {Operand()});
        const int64_t rank = in_.Int(0, 4);
        SetInts(node, "perm", rank, -1, 4);
        break;
      }
      case 5: {
        onnx::NodeProto* node = Node("Concat", {Operand(), Operand()});
        SetInt(node, "axis", in_.Int(-4, 4));
        break;
      }
      case 6: {
        const char* op = in_.Bool() ? "ReduceSum" : "ReduceMax";
        const std::string data = Operand();
        const int64_t count = in_.Int(0, 3);
        Node(op, {data, Ints(count, -4, 4)});
        break;
      }
      case 7: {
        onnx::NodeProto* node = Node("Cast", {Operand()});
        SetInt(node, "to", in_.Pick(kCastTypes));
        break;
      }
      case 8: Node("Slice", {Operand(), Ints(1, -5, 5), Ints(1, -5, 9), Ints(1, -3, 3), Ints(1, -2, 2)}); break;
      case 9: {
        const std::string data = Operand();
        const int64_t count = in_.Int(0, 3);
        onnx::NodeProto* node = Node("Gather", {data, Ints(count, -5, 5)});
        SetInt(node, "axis", in_.Int(-3, 3));
        break;
      }
      // Shapes from the data, up to 2^20 and 2^24 per dim: the memory cap must hold.
      case 10: {
        const char* op = in_.Bool() ? "Expand" : "Tile";
        const std::string data = Operand();
        const int64_t rank = in_.Int(0, 4);
        const int64_t largest = int64_t{1} << in_.Int(0, 20);
        Node(op, {data, Ints(rank, -1, largest)});
        break;
      }
      case 11: {
        const int64_t rank = in_.Int(0, 4);
        const int64_t largest = int64_t{1} << in_.Int(0, 24);
        Node("ConstantOfShape", {Ints(rank, -1, largest)});
        break;
      }
      case 12: Node("Range", {Scalar(), Scalar(), Scalar()}); break;
      case 13: {
        onnx::NodeProto* gemm = Node("Gemm", {Operand(), Operand()});
        SetInt(gemm, "transA", in_.Int(0, 1));
        SetInt(gemm, "transB", in_.Int(0, 1));
        break;
      }
      case 14: AddIf(); break;
    }
  }

  void AddOutputs() {
    const int64_t count = in_.Int(1, 2);
    for (int64_t i = 0; i < count && i < static_cast<int64_t>(values_.size()); ++i) {
      graph_.add_output()->set_name(values_[values_.size() - 1 - i]);
    }
  }

 private:
  std::string Operand() { return values_[in_.Int(0, static_cast<int64_t>(values_.size()) - 1)]; }

  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs) {
    onnx::NodeProto* node = graph_.add_node();
    node->set_op_type(op);
    node->set_name("n" + std::to_string(graph_.node_size()));
    for (const std::string& input : inputs) node->add_input(input);
    const std::string output = "v" + std::to_string(graph_.node_size());
    node->add_output(output);
    values_.push_back(output);
    return node;
  }

  static void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }

  void SetInts(onnx::NodeProto* node, const std::string& name, int64_t count, int64_t lo, int64_t hi) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t i = 0; i < count; ++i) attr->add_ints(in_.Int(lo, hi));
  }

  // An int64 initializer of `count` values in [lo, hi]; its name.
  std::string Ints(int64_t count, int64_t lo, int64_t hi) {
    onnx::TensorProto* init = graph_.add_initializer();
    init->set_name("c" + std::to_string(graph_.initializer_size()));
    init->set_data_type(onnx::TensorProto::INT64);
    init->add_dims(count);
    for (int64_t i = 0; i < count; ++i) init->add_int64_data(in_.Int(lo, hi));
    return init->name();
  }

  std::string Scalar() {
    onnx::TensorProto* init = graph_.add_initializer();
    init->set_name("c" + std::to_string(graph_.initializer_size()));
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_float_data(in_.Float());
    return init->name();
  }

  // If(cond) with branches that each read an outer value through one unary node.
  void AddIf() {
    const std::string cond = Operand();
    onnx::NodeProto* node = Node("If", {cond});
    for (const char* branch : {"then_branch", "else_branch"}) {
      onnx::AttributeProto* attr = node->add_attribute();
      attr->set_name(branch);
      attr->set_type(onnx::AttributeProto::GRAPH);
      onnx::GraphProto* body = attr->mutable_g();
      body->set_name(branch);
      onnx::NodeProto* inner = body->add_node();
      inner->set_op_type(in_.Pick(kUnary));
      inner->add_input(Operand());
      inner->add_output(std::string(branch) + "_out");
      body->add_output()->set_name(inner->output(0));
    }
  }

  FuzzInput& in_;
  onnx::GraphProto& graph_;
  std::vector<std::string> values_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("fuzz");
  GraphRecipe recipe(in, graph);
  const int64_t inputs = in.Int(1, 2);
  for (int64_t i = 0; i < inputs; ++i) recipe.AddInput(static_cast<int>(i));
  const int64_t nodes = in.Int(1, kMaxNodes);
  for (int64_t i = 0; i < nodes; ++i) recipe.AddNode();
  recipe.AddOutputs();
  const uint64_t value_seed = static_cast<uint64_t>(in.Int(0, INT64_MAX));
  const bool specials = in.Bool();

  onnx_amp::ExecutorOptions options;
  options.num_threads = 1;
  options.fuse_activations = in.Bool();
  options.max_memory_bytes = kMemoryCapBytes;
  onnx_amp::Expected<std::unique_ptr<onnx_amp::Executor>> executor = onnx_amp::Executor::Create(model, options);
  if (!executor.ok()) return 0;
  std::mt19937_64 rng(value_seed);
  std::map<std::string, onnx_amp::Tensor> feeds;
  for (const onnx_amp::InputSpec& spec : (*executor)->inputs()) {
    onnx_amp::Expected<onnx_amp::Tensor> tensor = onnx_amp::RandomInput(spec, {}, rng);
    if (!tensor.ok()) return 0;
    if (specials && spec.dtype == onnx_amp::DType::kFloat32 && tensor->num_elements() > 0) {
      float* values = tensor->data<float>();
      values[0] = std::numeric_limits<float>::quiet_NaN();
      values[tensor->num_elements() - 1] = std::numeric_limits<float>::infinity();
    }
    feeds[spec.name] = std::move(*tensor);
  }
  (*executor)->Run(feeds).status().IgnoreError();
  return 0;
}
