// The conversion paths of convert.h as GoogleTest parameters, with readable test names.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "runtime/core/convert.h"

namespace onnx_amp {

inline constexpr ConvertPath kEveryConvertPath[] = {ConvertPath::kScalar, ConvertPath::kAvx2F16c,
                                                    ConvertPath::kAvx512, ConvertPath::kAvx512Bf16};
inline constexpr ConvertPath kVectorConvertPaths[] = {ConvertPath::kAvx2F16c, ConvertPath::kAvx512,
                                                      ConvertPath::kAvx512Bf16};

// Lets GoogleTest print a path by name instead of as raw bytes.
inline void PrintTo(ConvertPath path, std::ostream* os) { *os << ConvertPathName(path); }

inline std::string ConvertPathTestName(const testing::TestParamInfo<ConvertPath>& info) {
  std::string name(ConvertPathName(info.param));
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

// Fixture base: skips, naming the path, when this CPU cannot run it.
class ConvertPathTest : public testing::TestWithParam<ConvertPath> {
 protected:
  void SetUp() override {
    if (!ConvertPathSupported(GetParam())) {
      GTEST_SKIP() << "conversion path " << ConvertPathName(GetParam()) << " not supported by this CPU";
    }
  }
};

}  // namespace onnx_amp
