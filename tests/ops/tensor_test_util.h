// Small builders and checks shared by the shape / data-movement kernel tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {

inline std::vector<float> Iota(int64_t count, float start = 0.0f) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = start + static_cast<float>(i);
  return values;
}

inline Tensor Int64s(const std::vector<int64_t>& values) {
  return MakeTensor<int64_t>({static_cast<int64_t>(values.size())}, values);
}

inline Tensor Floats(const std::vector<float>& values) {
  return MakeTensor<float>({static_cast<int64_t>(values.size())}, values);
}

// Runs the node and returns output 0 (failing the test on an error status).
inline Tensor RunOne(const SingleNode& node) {
  Expected<std::vector<Tensor>> outputs = node.Run();
  EXPECT_TRUE(outputs.ok()) << outputs.status().message();
  if (!outputs.ok() || outputs->empty()) return Tensor();
  return (*outputs)[0];
}

// Expects an error whose message names the node, as KernelContext::Error writes it.
inline void ExpectNodeError(const SingleNode& node, ErrorCode code, const std::string& fragment) {
  Expected<std::vector<Tensor>> outputs = node.Run();
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), code) << outputs.status().message();
  EXPECT_NE(outputs.status().message().find("test_node"), std::string::npos) << outputs.status().message();
  EXPECT_NE(outputs.status().message().find(fragment), std::string::npos) << outputs.status().message();
}

}  // namespace onnx_amp::testing
