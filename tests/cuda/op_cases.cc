#include "tests/cuda/op_cases.h"

#include <cmath>
#include <limits>

#include "runtime/core/onnx_domain.h"

namespace onnx_amp::testing {
namespace {

const std::string kAmp(kOnnxAmpDomain);

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<DType> kFloat32Only = {DType::kFloat32};

CaseInput F(Shape shape, double low = -2.0, double high = 2.0) { return {std::move(shape), DType::kUndefined, low, high, {}}; }
CaseInput Fixed(Shape shape, DType dtype, std::vector<double> values) {
  return {std::move(shape), dtype, 0, 0, std::move(values)};
}
CaseInput Of(Shape shape, DType dtype, double low, double high) { return {std::move(shape), dtype, low, high, {}}; }
CaseInput Ints(std::vector<double> values) {
  Shape shape = {static_cast<int64_t>(values.size())};
  return Fixed(shape, DType::kInt64, std::move(values));
}
CaseInput Absent() { return {{}, DType::kUndefined, 0, 0, {}, true}; }

std::function<void(onnx::NodeProto&)> Attrs(std::function<void(onnx::NodeProto&)> f) { return f; }

void Unary(std::vector<OpCase>& cases, const std::string& op, double low = -3.0, double high = 3.0,
           bool transcendental = false, std::function<void(onnx::NodeProto&)> attributes = {}) {
  OpCase c;
  c.name = op;
  c.op_type = op;
  c.inputs = {F({3, 257}, low, high)};
  c.transcendental = transcendental;
  c.attributes = std::move(attributes);
  cases.push_back(std::move(c));
}

void AddElementwise(std::vector<OpCase>& cases) {
  for (const char* op : {"Abs", "Neg", "Floor", "Ceil", "Round", "Sign", "Relu", "HardSwish", "Softsign"}) {
    Unary(cases, op);
  }
  for (const char* op : {"Sqrt", "Reciprocal", "Log"}) Unary(cases, op, 0.1, 4.0, true);
  for (const char* op : {"Exp", "Sin", "Cos", "Tan", "Erf", "Sigmoid", "Softplus", "Tanh", "Mish"}) {
    Unary(cases, op, -3.0, 3.0, true);
  }
  Unary(cases, "LeakyRelu", -3, 3, false, Attrs([](onnx::NodeProto& n) { SetFloat(n, "alpha", 0.2f); }));
  Unary(cases, "Elu", -3, 3, true, Attrs([](onnx::NodeProto& n) { SetFloat(n, "alpha", 0.5f); }));
  Unary(cases, "Selu", -3, 3, true);
  Unary(cases, "Celu", -3, 3, true, Attrs([](onnx::NodeProto& n) { SetFloat(n, "alpha", 1.5f); }));
  Unary(cases, "HardSigmoid", -4, 4, false, Attrs([](onnx::NodeProto& n) { SetFloat(n, "alpha", 0.3f); }));
  Unary(cases, "ThresholdedRelu", -3, 3, false, Attrs([](onnx::NodeProto& n) { SetFloat(n, "alpha", 0.5f); }));
  Unary(cases, "Gelu", -4, 4, true);
  cases.back().opset = 20;
  Unary(cases, "Gelu", -4, 4, true, Attrs([](onnx::NodeProto& n) { SetString(n, "approximate", "tanh"); }));
  cases.back().name = "GeluTanh";
  cases.back().opset = 20;
  cases.push_back({"Clip", "Clip", "", 13, {F({4, 100}), F({}, -1.0, -1.0), F({}, 0.5, 0.5)}});
  const std::vector<double> specials = {0.0, -1.5, kNaN, kInf, -kInf, 2.0};
  cases.push_back({"IsNaN", "IsNaN", "", 13, {Fixed({6}, DType::kUndefined, specials)}});
  OpCase is_inf{"IsInfPositive", "IsInf", "", 10, {Fixed({6}, DType::kUndefined, specials)}};
  is_inf.attributes = [](onnx::NodeProto& n) { SetInt(n, "detect_negative", 0); };
  cases.push_back(is_inf);
  cases.push_back({"Not", "Not", "", 1, {Of({50}, DType::kBool, 0, 2)}, 1, {}, 1, kFloat32Only});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    cases.push_back({op, op, "", 14, {F({4, 1, 33}), F({5, 33}, 0.5, 2.0)}});
  }
  cases.push_back({"AddSameShape", "Add", "", 14, {F({7, 129}), F({7, 129})}});
  cases.push_back({"AddInt64", "Add", "", 14, {Of({6}, DType::kInt64, -50, 50), Of({1}, DType::kInt64, -50, 50)},
                   1, {}, 1, kFloat32Only});
  cases.push_back({"Pow", "Pow", "", 15, {F({3, 40}, 0.5, 2.0), F({40}, -2.0, 2.0)}, 1, {}, 1, {}, true});
  cases.push_back({"PRelu", "PRelu", "", 16, {F({2, 4, 6}), F({4, 1}, 0.0, 0.5)}});
  const std::vector<double> left = {1, 2, 3, -1, 0.5, 2}, right = {1, 3, 2, -1, 0.25, 2};
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    cases.push_back({op, op, "", 16, {Fixed({6}, DType::kUndefined, left), Fixed({6}, DType::kUndefined, right)}});
  }
  for (const char* op : {"And", "Or", "Xor"}) {
    cases.push_back({op, op, "", 7, {Of({3, 20}, DType::kBool, 0, 2), Of({20}, DType::kBool, 0, 2)}, 1, {}, 1,
                     kFloat32Only});
  }
  cases.push_back({"Max", "Max", "", 13, {F({4, 9}), F({9})}});
  cases.push_back({"Min", "Min", "", 13, {F({4, 9}), F({4, 9}), F({1, 9})}});
  cases.push_back({"Sum", "Sum", "", 13, {F({2, 3, 5}), F({5}), F({3, 1})}, 1, {}, 3});
  cases.push_back({"Mean", "Mean", "", 13, {F({6, 7}), F({6, 7})}, 1, {}, 2});
  cases.push_back({"Where", "Where", "", 16, {Of({4, 1}, DType::kBool, 0, 2), F({4, 6}), F({6})}});
  OpCase cast_up{"CastToFloat", "Cast", "", 19, {F({300})}};
  cast_up.attributes = [](onnx::NodeProto& n) { SetInt(n, "to", 1); };
  cases.push_back(cast_up);
  OpCase cast_down{"CastToBFloat16", "Cast", "", 19, {Of({300}, DType::kFloat32, -1e5, 1e5)}, 1, {}, 1, kFloat32Only};
  cast_down.attributes = [](onnx::NodeProto& n) { SetInt(n, "to", 16); };
  cases.push_back(cast_down);
  OpCase cast_half{"CastToFloat16", "Cast", "", 19, {Of({300}, DType::kFloat32, -7e4, 7e4)}, 1, {}, 1, kFloat32Only};
  cast_half.attributes = [](onnx::NodeProto& n) { SetInt(n, "to", 10); };
  cases.push_back(cast_half);
  OpCase cast_int{"CastInt64ToFloat", "Cast", "", 19, {Of({50}, DType::kInt64, -1000, 1000)}, 1, {}, 1, kFloat32Only};
  cast_int.attributes = [](onnx::NodeProto& n) { SetInt(n, "to", 1); };
  cases.push_back(cast_int);
  cases.push_back({"CastLike", "CastLike", "", 19, {Of({40}, DType::kFloat32, -5, 5), F({1})}});
  for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad", "GeluGrad"}) {
    cases.push_back({op, op, kAmp, 17, {F({5, 77}), F({5, 77}, -3.0, 3.0)}, 1, {}, 1, {}, true});
  }
  OpCase gelu_tanh{"GeluGradTanh", "GeluGrad", kAmp, 17, {F({5, 77}), F({5, 77}, -3.0, 3.0)}};
  gelu_tanh.attributes = [](onnx::NodeProto& n) { SetString(n, "approximate", "tanh"); };
  gelu_tanh.transcendental = true;
  cases.push_back(gelu_tanh);
}

void AddReductions(std::vector<OpCase>& cases) {
  struct Layout {
    const char* name;
    Shape shape;
    std::vector<double> axes;
    int64_t reduced;
  };
  const Layout layouts[] = {{"Rows", {4, 300}, {1}, 300},
                            {"LongRows", {3, 5000}, {-1}, 5000},
                            {"Columns", {640, 40}, {0}, 640},
                            {"Scattered", {2, 3, 4}, {0, 2}, 8}};
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSumExp"}) {
    for (const Layout& layout : layouts) {
      if (std::string(op) == "ReduceLogSumExp" && std::string(layout.name) == "Scattered") continue;
      OpCase c{std::string(op) + layout.name, op, "", 18, {F(layout.shape), Ints(layout.axes)}};
      c.accumulated = layout.reduced;
      c.transcendental = std::string(op) == "ReduceL2" || std::string(op) == "ReduceLogSumExp";
      cases.push_back(c);
    }
  }
  OpCase prod{"ReduceProd", "ReduceProd", "", 18, {F({5, 12}, 0.8, 1.25), Ints({1})}};
  prod.accumulated = 12;
  cases.push_back(prod);
  OpCase log_sum{"ReduceLogSum", "ReduceLogSum", "", 18, {F({5, 12}, 0.1, 2.0), Ints({1})}};
  log_sum.accumulated = 12;
  log_sum.transcendental = true;
  cases.push_back(log_sum);
  OpCase keep{"ReduceSumOpset13NoKeepdims", "ReduceSum", "", 13, {F({6, 50}), Ints({1})}};
  keep.attributes = [](onnx::NodeProto& n) { SetInt(n, "keepdims", 0); };
  keep.accumulated = 50;
  cases.push_back(keep);
}

void AddNormalization(std::vector<OpCase>& cases) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    OpCase rows{std::string(op) + "Rows", op, "", 13, {F({8, 100}, -5, 5)}, 1, {}, 100, {}, true};
    cases.push_back(rows);
    OpCase long_rows{std::string(op) + "LongRows", op, "", 13, {F({2, 3000}, -5, 5)}, 1, {}, 3000, {}, true};
    cases.push_back(long_rows);
    OpCase strided{std::string(op) + "Axis1", op, "", 13, {F({4, 6, 5}, -5, 5)}, 1, {}, 6, {}, true};
    strided.attributes = [](onnx::NodeProto& n) { SetInt(n, "axis", 1); };
    cases.push_back(strided);
    OpCase coerced{std::string(op) + "Opset11", op, "", 11, {F({4, 6, 5}, -5, 5)}, 1, {}, 30, {}, true};
    cases.push_back(coerced);
  }
  for (const char* op : {"SoftmaxGrad", "LogSoftmaxGrad"}) {
    OpCase grad{op, op, kAmp, 17, {F({6, 40}), F({6, 40}, -1.0, 0.0)}, 1, {}, 40, {}, true};
    cases.push_back(grad);
  }
  OpCase layer{"LayerNormalization", "LayerNormalization", "", 17, {F({6, 64}), F({64}), F({64})}, 3};
  layer.accumulated = 64;
  layer.transcendental = true;
  cases.push_back(layer);
  OpCase long_layer{"LayerNormalizationLongRows", "LayerNormalization", "", 17, {F({3, 2000}), F({2000}), Absent()}, 1};
  long_layer.accumulated = 2000;
  long_layer.transcendental = true;
  cases.push_back(long_layer);
  OpCase layer_grad{"LayerNormalizationGrad", "LayerNormalizationGrad", kAmp, 17,
                    {F({300, 32}), F({300, 32}), F({32}), Of({300, 1}, DType::kFloat32, -0.5, 0.5),
                     Of({300, 1}, DType::kFloat32, 0.5, 2.0)},
                    3};
  layer_grad.accumulated = 300;
  cases.push_back(layer_grad);
  OpCase batch{"BatchNormalizationInference", "BatchNormalization", "", 15,
               {F({4, 3, 5, 5}), F({3}), F({3}), F({3}), F({3}, 0.5, 2.0)}};
  batch.transcendental = true;
  cases.push_back(batch);
  OpCase batch_train{"BatchNormalizationTraining", "BatchNormalization", "", 15,
                     {F({8, 3, 20, 20}), F({3}), F({3}), F({3}), F({3}, 0.5, 2.0)}, 3};
  batch_train.attributes = [](onnx::NodeProto& n) { SetInt(n, "training_mode", 1); };
  batch_train.accumulated = 3200;
  batch_train.transcendental = true;
  cases.push_back(batch_train);
  for (int training : {0, 1}) {
    OpCase grad{training ? "BatchNormalizationGradTraining" : "BatchNormalizationGradInference",
                "BatchNormalizationGrad", kAmp, 17,
                {F({8, 3, 10, 10}), F({8, 3, 10, 10}), F({3}), F({3}), F({3}, 0.5, 2.0)}, 3};
    grad.attributes = [training](onnx::NodeProto& n) { SetInt(n, "training_mode", training); };
    grad.accumulated = 800;
    grad.transcendental = true;
    cases.push_back(grad);
  }
}

void AddLosses(std::vector<OpCase>& cases) {
  const CaseInput labels = Of({16}, DType::kInt64, 0, 10);
  for (const std::string& domain : {std::string(), kAmp}) {
    const std::string suffix = std::string(domain).empty() ? "" : "Amp";
    OpCase sce{"SoftmaxCrossEntropyLoss" + suffix, "SoftmaxCrossEntropyLoss", domain, 13, {F({16, 10}, -4, 4), labels}, 2};
    sce.accumulated = 16;
    sce.transcendental = true;
    cases.push_back(sce);
    OpCase nll{"NegativeLogLikelihoodLoss" + suffix, "NegativeLogLikelihoodLoss", domain, 13,
               {F({16, 10}, -4, 0), labels}};
    nll.accumulated = 16;
    cases.push_back(nll);
  }
  OpCase ignored{"SoftmaxCrossEntropyLossIgnoreSum", "SoftmaxCrossEntropyLoss", kAmp, 13,
                 {F({12, 5, 3}, -4, 4), Of({12, 3}, DType::kInt64, 0, 5), F({5}, 0.5, 2.0)}, 1};
  ignored.attributes = [](onnx::NodeProto& n) {
    SetInt(n, "ignore_index", 2);
    SetString(n, "reduction", "sum");
  };
  ignored.accumulated = 36;
  ignored.transcendental = true;
  cases.push_back(ignored);
  OpCase none{"NegativeLogLikelihoodLossNone", "NegativeLogLikelihoodLoss", kAmp, 13,
              {F({16, 10}, -4, 0), labels}};
  none.attributes = [](onnx::NodeProto& n) { SetString(n, "reduction", "none"); };
  cases.push_back(none);
  OpCase mse{"MeanSquaredError", "MeanSquaredError", kAmp, 13, {F({8, 5}), F({8, 5})}};
  mse.accumulated = 40;
  cases.push_back(mse);
  OpCase sce_grad{"SoftmaxCrossEntropyLossGrad", "SoftmaxCrossEntropyLossGrad", kAmp, 13,
                  {F({}, 0.5, 2.0), F({16, 10}, -4, -0.1), labels}};
  sce_grad.accumulated = 16;
  sce_grad.transcendental = true;
  cases.push_back(sce_grad);
  OpCase nll_grad{"NegativeLogLikelihoodLossGradWeighted", "NegativeLogLikelihoodLossGrad", kAmp, 13,
                  {F({}, 0.5, 2.0), F({16, 10}, -4, 0), labels, F({10}, 0.5, 2.0)}};
  nll_grad.accumulated = 16;
  cases.push_back(nll_grad);
  cases.push_back({"MeanSquaredErrorGrad", "MeanSquaredErrorGrad", kAmp, 13, {F({}), F({8, 5}), F({8, 5})}});
}

}  // namespace

const std::vector<OpCase>& CudaOpCases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> all;
    AddElementwise(all);
    AddReductions(all);
    AddNormalization(all);
    AddLosses(all);
    AddLinalgConvTensorTrainingCases(all);
    return all;
  }();
  return cases;
}

void SetInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void SetFloat(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetString(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

}  // namespace onnx_amp::testing
