// The GEMM, convolution, data-movement and optimizer-step cases of the CUDA op table.
#include <limits>

#include "runtime/core/onnx_domain.h"
#include "tests/cuda/op_cases.h"

namespace onnx_amp::testing {
namespace {

const std::string kAmp(kOnnxAmpDomain);

const std::vector<DType> kFloat32Only = {DType::kFloat32};

CaseInput F(Shape shape, double low = -2.0, double high = 2.0) { return {std::move(shape), DType::kUndefined, low, high, {}}; }
CaseInput Of(Shape shape, DType dtype, double low, double high) { return {std::move(shape), dtype, low, high, {}}; }
CaseInput Ints(std::vector<double> values) {
  Shape shape = {static_cast<int64_t>(values.size())};
  return {shape, DType::kInt64, 0, 0, std::move(values)};
}
CaseInput Scalar(DType dtype, double value) { return {{}, dtype, 0, 0, {value}}; }

void AddLinalg(std::vector<OpCase>& cases) {
  struct Gemm {
    const char* name;
    Shape a, b, c;
    int64_t trans_a, trans_b;
    float alpha, beta;
    bool relu_after;
  };
  const Gemm gemms[] = {{"GemmBias", {32, 48}, {48, 24}, {24}, 0, 0, 1.0f, 1.0f, false},
                        {"GemmTransposedNoBias", {48, 32}, {24, 48}, {}, 1, 1, 1.0f, 1.0f, false},
                        {"GemmMatrixCBeta", {32, 48}, {48, 24}, {32, 24}, 0, 0, 2.0f, 0.5f, false},
                        {"GemmColumnC", {17, 48}, {48, 9}, {17, 1}, 0, 0, 1.0f, 1.0f, false},
                        {"GemmUnaligned", {7, 13}, {13, 5}, {5}, 0, 0, 1.0f, 1.0f, false}};
  for (const Gemm& g : gemms) {
    OpCase c{g.name, "Gemm", "", 13, {F(g.a), F(g.b)}};
    if (!g.c.empty()) c.inputs.push_back(F(g.c));
    c.attributes = [g](onnx::NodeProto& n) {
      SetInt(n, "transA", g.trans_a);
      SetInt(n, "transB", g.trans_b);
      SetFloat(n, "alpha", g.alpha);
      SetFloat(n, "beta", g.beta);
    };
    c.accumulated = 48;
    cases.push_back(c);
  }
  struct MatMul {
    const char* name;
    Shape a, b;
    int64_t k;
  };
  const MatMul matmuls[] = {{"MatMulFoldedBatch", {2, 3, 16, 32}, {32, 8}, 32},
                            {"MatMulBatched", {4, 16, 32}, {4, 32, 8}, 32},
                            {"MatMulBroadcastA", {16, 32}, {3, 32, 8}, 32},
                            {"MatMulPartialBroadcast", {2, 1, 8, 16}, {1, 3, 16, 4}, 16},
                            {"MatMulVectorMatrix", {24}, {24, 10}, 24},
                            {"MatMulMatrixVector", {10, 24}, {24}, 24}};
  for (const MatMul& m : matmuls) {
    OpCase c{m.name, "MatMul", "", 13, {F(m.a), F(m.b)}};
    c.accumulated = m.k;
    cases.push_back(c);
  }
}

void AddConv(std::vector<OpCase>& cases) {
  OpCase conv{"ConvStridedPadded", "Conv", "", 11, {F({2, 4, 9, 9}), F({8, 4, 3, 3}), F({8})}};
  conv.attributes = [](onnx::NodeProto& n) {
    SetInts(n, "pads", {1, 1, 1, 1});
    SetInts(n, "strides", {2, 2});
  };
  conv.accumulated = 36;
  cases.push_back(conv);
  OpCase grouped{"ConvGroupedDilated", "Conv", "", 11, {F({2, 4, 11, 11}), F({6, 2, 3, 3})}};
  grouped.attributes = [](onnx::NodeProto& n) {
    SetInt(n, "group", 2);
    SetInts(n, "dilations", {2, 2});
    SetInts(n, "pads", {2, 1, 2, 1});
  };
  grouped.accumulated = 18;
  cases.push_back(grouped);
  OpCase conv1d{"Conv1D", "Conv", "", 11, {F({2, 3, 20}), F({4, 3, 5}), F({4})}};
  conv1d.attributes = [](onnx::NodeProto& n) { SetString(n, "auto_pad", "SAME_UPPER"); };
  conv1d.accumulated = 15;
  cases.push_back(conv1d);
  OpCase grad{"ConvGrad", "ConvGrad", kAmp, 17, {F({2, 8, 9, 9}), F({2, 4, 9, 9}), F({8, 4, 3, 3})}, 3};
  grad.attributes = [](onnx::NodeProto& n) {
    SetInts(n, "pads", {1, 1, 1, 1});
    SetInts(n, "kernel_shape", {3, 3});
  };
  grad.accumulated = 2 * 81;
  cases.push_back(grad);
  OpCase max_pool{"MaxPoolWithIndices", "MaxPool", "", 12, {F({2, 3, 9, 9})}, 2};
  max_pool.attributes = [](onnx::NodeProto& n) {
    SetInts(n, "kernel_shape", {3, 3});
    SetInts(n, "strides", {2, 2});
    SetInts(n, "pads", {1, 1, 1, 1});
    SetInt(n, "ceil_mode", 1);
  };
  cases.push_back(max_pool);
  for (int include_pad : {0, 1}) {
    OpCase average{include_pad ? "AveragePoolCountPad" : "AveragePool", "AveragePool", "", 11, {F({2, 3, 8, 8})}};
    average.attributes = [include_pad](onnx::NodeProto& n) {
      SetInts(n, "kernel_shape", {3, 3});
      SetInts(n, "pads", {1, 1, 1, 1});
      SetInt(n, "count_include_pad", include_pad);
    };
    average.accumulated = 9;
    cases.push_back(average);
  }
  OpCase global_average{"GlobalAveragePool", "GlobalAveragePool", "", 11, {F({2, 3, 7, 7})}};
  global_average.accumulated = 49;
  cases.push_back(global_average);
  cases.push_back({"GlobalMaxPool", "GlobalMaxPool", "", 11, {F({2, 3, 7, 7})}});
  OpCase max_grad{"MaxPoolGrad", "MaxPoolGrad", kAmp, 17, {F({2, 3, 4, 4}), F({2, 3, 8, 8})}};
  max_grad.attributes = [](onnx::NodeProto& n) {
    SetInts(n, "kernel_shape", {3, 3});
    SetInts(n, "strides", {2, 2});
    SetInts(n, "pads", {1, 1, 1, 1});
  };
  max_grad.accumulated = 4;
  cases.push_back(max_grad);
  OpCase average_grad{"AveragePoolGrad", "AveragePoolGrad", kAmp, 17, {F({2, 3, 8, 8}), F({2, 3, 8, 8})}};
  average_grad.attributes = [](onnx::NodeProto& n) {
    SetInts(n, "kernel_shape", {3, 3});
    SetInts(n, "pads", {1, 1, 1, 1});
  };
  average_grad.accumulated = 9;
  cases.push_back(average_grad);
}

void AddTensor(std::vector<OpCase>& cases) {
  cases.push_back({"Reshape", "Reshape", "", 14, {F({2, 3, 4}), Ints({4, -1, 2})}});
  OpCase flatten{"Flatten", "Flatten", "", 13, {F({2, 3, 4, 5})}};
  flatten.attributes = [](onnx::NodeProto& n) { SetInt(n, "axis", 2); };
  cases.push_back(flatten);
  cases.push_back({"Squeeze", "Squeeze", "", 13, {F({2, 1, 3}), Ints({1})}});
  cases.push_back({"Unsqueeze", "Unsqueeze", "", 13, {F({2, 3}), Ints({0, 3})}});
  cases.push_back({"Identity", "Identity", "", 16, {F({5, 5})}});
  OpCase transpose{"Transpose", "Transpose", "", 13, {F({3, 4, 5, 6})}};
  transpose.attributes = [](onnx::NodeProto& n) { SetInts(n, "perm", {2, 0, 3, 1}); };
  cases.push_back(transpose);
  OpCase concat{"Concat", "Concat", "", 13, {F({2, 3, 4}), F({2, 5, 4}), F({2, 1, 4})}};
  concat.attributes = [](onnx::NodeProto& n) { SetInt(n, "axis", 1); };
  cases.push_back(concat);
  cases.push_back({"Expand", "Expand", "", 13, {F({3, 1}), Ints({2, 3, 4})}});
}

void AddTraining(std::vector<OpCase>& cases) {
  const DType f32 = DType::kFloat32;
  OpCase unscale{"UnscaleAndCheck", "UnscaleAndCheck", kAmp, 17,
                 {Scalar(f32, 1024.0), Of({100}, f32, -5e3, 5e3), Of({70000}, f32, -5e3, 5e3)}, 4};
  unscale.dtypes = kFloat32Only;
  cases.push_back(unscale);
  OpCase unscale_inf{"UnscaleAndCheckNonFinite", "UnscaleAndCheck", kAmp, 17,
                     {Scalar(f32, 8.0), Of({10}, f32, -1, 1), {{3}, f32, 0, 0, {1.0, std::numeric_limits<double>::infinity(), 2.0}}},
                     4};
  unscale_inf.dtypes = kFloat32Only;
  cases.push_back(unscale_inf);
  OpCase clip{"GlobalNormClip", "GlobalNormClip", kAmp, 17,
              {Scalar(DType::kInt64, 2), Of({300}, f32, -1, 1), Of({70000}, f32, -1, 1)}, 2};
  clip.attributes = [](onnx::NodeProto& n) { SetFloat(n, "max_norm", 0.5f); };
  clip.dtypes = kFloat32Only;
  clip.accumulated = 70300;
  cases.push_back(clip);
  for (bool skip : {false, true}) {
    const std::string suffix = skip ? "Skipped" : "";
    OpCase sgd{"SgdUpdateMomentum" + suffix, "SgdUpdate", kAmp, 17,
               {Of({500}, f32, -1, 1), Of({500}, f32, -1, 1), Of({500}, f32, -1, 1), Scalar(f32, 0.01),
                Scalar(DType::kBool, skip)},
               2};
    sgd.attributes = [](onnx::NodeProto& n) {
      SetFloat(n, "momentum", 0.9f);
      SetInt(n, "nesterov", 1);
    };
    sgd.dtypes = kFloat32Only;
    cases.push_back(sgd);
    for (const char* adam : {"AdamUpdate", "AdamWUpdate"}) {
      OpCase c{adam + suffix, adam, kAmp, 17,
               {Of({500}, f32, -1, 1), Of({500}, f32, -1, 1), Of({500}, f32, -0.1, 0.1), Of({500}, f32, 0, 0.1),
                Scalar(f32, 0.001), Scalar(DType::kInt64, 7), Scalar(DType::kBool, skip)},
               3};
      c.dtypes = kFloat32Only;
      c.transcendental = true;
      cases.push_back(c);
    }
    OpCase rms{"RmspropUpdate" + suffix, "RmspropUpdate", kAmp, 17,
               {Of({500}, f32, -1, 1), Of({500}, f32, -1, 1), Of({500}, f32, 0, 0.1), Scalar(f32, 0.001),
                Scalar(DType::kBool, skip)},
               2};
    rms.dtypes = kFloat32Only;
    rms.transcendental = true;
    cases.push_back(rms);
  }
  OpCase plain_sgd{"SgdUpdatePlain", "SgdUpdate", kAmp, 17,
                   {Of({64}, f32, -1, 1), Of({64}, f32, -1, 1), {{}, f32, 0, 0, {}, true}, Scalar(f32, 0.1),
                    Scalar(DType::kBool, 0)}};
  plain_sgd.dtypes = kFloat32Only;
  cases.push_back(plain_sgd);
}

}  // namespace

void AddLinalgConvTensorTrainingCases(std::vector<OpCase>& cases) {
  AddLinalg(cases);
  AddConv(cases);
  AddTensor(cases);
  AddTraining(cases);
}

}  // namespace onnx_amp::testing
