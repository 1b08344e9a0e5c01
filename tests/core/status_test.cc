#include "runtime/core/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace onnx_amp {
namespace {

Expected<int> ParsePositive(int value) {
  if (value <= 0) return InvalidArgument("--count must be positive, got " + std::to_string(value));
  return value;
}

Expected<int> Doubled(int value) {
  ONNX_AMP_ASSIGN_OR_RETURN(int parsed, ParsePositive(value));
  return parsed * 2;
}

Status CheckBoth(int a, int b) {
  ONNX_AMP_RETURN_IF_ERROR(ParsePositive(a).status());
  ONNX_AMP_RETURN_IF_ERROR(ParsePositive(b).status());
  return Status::Ok();
}

TEST(StatusTest, ErrorCarriesCodeAndContext) {
  const Status status = NotFound("no such file").WithContext("model.onnx");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kNotFound);
  EXPECT_EQ(status.message(), "model.onnx: no such file");
  EXPECT_TRUE(Status::Ok().WithContext("ignored").ok());
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(Doubled(21).value(), 42);
  const Expected<int> failed = Doubled(-3);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.status().message(), "--count must be positive, got -3");
  EXPECT_EQ(CheckBoth(1, 0).message(), "--count must be positive, got 0");
  EXPECT_TRUE(CheckBoth(1, 2).ok());
}

TEST(StatusTest, ExpectedFromOkStatusBecomesInternalError) {
  const Expected<int> wrong{Status::Ok()};
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), ErrorCode::kInternal);
}

TEST(StatusTest, ExpectedHoldsMoveOnlyValues) {
  Expected<std::unique_ptr<int>> boxed{std::make_unique<int>(7)};
  ASSERT_TRUE(boxed.ok());
  std::unique_ptr<int> taken = std::move(boxed).value();
  EXPECT_EQ(*taken, 7);
}

}  // namespace
}  // namespace onnx_amp
