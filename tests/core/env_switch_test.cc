// The on/off environment switches (runtime/core/env_switch.h): on by default, "0" off,
// "1" on, anything else named on stderr and taken as on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/core/env_switch.h"

namespace onnx_amp {
namespace {

constexpr const char* kName = "ONNX_AMP_TEST_SWITCH";

// EnvSwitchOn(kName) with the variable set to `value` (unset for null), and what it
// printed on stderr.
std::pair<bool, std::string> ReadWith(const char* value) {
  if (value == nullptr) unsetenv(kName);
  else setenv(kName, value, 1);
  ::testing::internal::CaptureStderr();
  const bool on = EnvSwitchOn(kName);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  unsetenv(kName);
  return {on, printed};
}

TEST(EnvSwitchTest, OnUnlessZero) {
  for (const char* value : {static_cast<const char*>(nullptr), "", "1"}) {
    const auto [on, printed] = ReadWith(value);
    EXPECT_TRUE(on) << (value ? value : "(unset)");
    EXPECT_EQ(printed, "") << (value ? value : "(unset)");
  }
  const auto [on, printed] = ReadWith("0");
  EXPECT_FALSE(on);
  EXPECT_EQ(printed, "");
}

TEST(EnvSwitchTest, OtherValuesAreNamedAndTakenAsOn) {
  for (const char* value : {"off", "false", "00", " 0"}) {
    const auto [on, printed] = ReadWith(value);
    EXPECT_TRUE(on) << value;
    EXPECT_EQ(printed, std::string("onnx-amp: ONNX_AMP_TEST_SWITCH='") + value + "' is not 0 or 1; using 1\n");
  }
}

}  // namespace
}  // namespace onnx_amp
