// The size limits on untrusted input: element counts that overflow or pass the limit,
// negative dims and ranks are rejected with a message naming the tensor; byte-size flags
// parse K/M/G/T as powers of 1024 and reject anything else.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/core/limits.h"

namespace onnx_amp {
namespace {

TEST(CheckedElementCountTest, CountsWithinTheLimit) {
  const std::vector<int64_t> dims = {2, 3, 4};
  Expected<int64_t> count = CheckedElementCount(dims, "tensor 'w'");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 24);
  EXPECT_EQ(*CheckedElementCount({}, "scalar"), 1);
  const std::vector<int64_t> empty = {0, 5};
  EXPECT_EQ(*CheckedElementCount(empty, "empty"), 0);
  const std::vector<int64_t> at_limit = {int64_t{1} << 20, int64_t{1} << 20};
  EXPECT_EQ(*CheckedElementCount(at_limit, "at the limit"), kMaxTensorElements);
}

TEST(CheckedElementCountTest, RejectsCountsThatWouldOverflow) {
  // 2^31 * 2^31 * 4 = 2^64 wraps to 0 in 64 bits.
  const std::vector<int64_t> wraps = {int64_t{1} << 31, int64_t{1} << 31, 4};
  Expected<int64_t> count = CheckedElementCount(wraps, "tensor 'w'");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("tensor 'w'"), std::string::npos);
  const std::vector<int64_t> past_limit = {(int64_t{1} << 20) + 1, int64_t{1} << 20};
  EXPECT_FALSE(CheckedElementCount(past_limit, "x").ok());
  // A zero dim does not excuse an absurd one.
  const std::vector<int64_t> zero_then_huge = {0, int64_t{1} << 50};
  EXPECT_FALSE(CheckedElementCount(zero_then_huge, "x").ok());
}

TEST(CheckedElementCountTest, RejectsNegativeDimsAndDeepRanks) {
  const std::vector<int64_t> negative = {3, -1};
  EXPECT_NE(CheckedElementCount(negative, "x").status().message().find("negative dimension -1"), std::string::npos);
  const std::vector<int64_t> deep(kMaxTensorRank + 1, 1);
  EXPECT_NE(CheckedElementCount(deep, "x").status().message().find("rank 65"), std::string::npos);
}

TEST(CheckMemoryCapTest, NamesWhatPassesTheCap) {
  EXPECT_TRUE(CheckMemoryCap(100, 100, "x", "--max-memory").ok());
  const Status status = CheckMemoryCap(101, 100, "output 'y'", "--max-memory");
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(status.message(), "output 'y' needs 101 bytes, more than the 100 bytes --max-memory allows");
  EXPECT_GT(PhysicalMemoryBytes(), size_t{1} << 20);
}

TEST(ParseByteSizeTest, ReadsSuffixesAsPowersOf1024) {
  EXPECT_EQ(*ParseByteSize("4096", "--max-memory"), 4096u);
  EXPECT_EQ(*ParseByteSize("3K", "--max-memory"), 3u * 1024);
  EXPECT_EQ(*ParseByteSize("512M", "--max-memory"), 512u << 20);
  EXPECT_EQ(*ParseByteSize("8g", "--max-memory"), size_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("1T", "--max-memory"), size_t{1} << 40);
}

TEST(ParseByteSizeTest, RejectsMalformedSizesNamingTheFlag) {
  for (const char* text : {"", "0", "-1", "12X", "1.5G", "G", "1GB", "99999999999999999999", "17179869184T"}) {
    Expected<size_t> size = ParseByteSize(text, "--max-memory");
    ASSERT_FALSE(size.ok()) << text;
    EXPECT_EQ(size.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(size.status().message().rfind("--max-memory '", 0), 0u) << size.status().message();
  }
}

}  // namespace
}  // namespace onnx_amp
