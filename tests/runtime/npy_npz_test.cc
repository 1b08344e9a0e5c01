// .npy / .npz parsing and writing in C++; the NumPy cross-check is npz_numpy_test.py.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "runtime/io/npy.h"
#include "runtime/io/npz.h"

namespace onnx_amp {
namespace {

Tensor Pattern(DType dtype, Shape shape) {
  Tensor t = Tensor::Empty(dtype, std::move(shape));
  uint8_t* bytes = static_cast<uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.bytes(); ++i) bytes[i] = static_cast<uint8_t>(dtype == DType::kBool ? i % 2 : i * 29 + 3);
  return t;
}

bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

// A v1 .npy file with the given header dict and payload.
std::string NpyWithHeader(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + payload;
}

TEST(NpyTest, RoundTripEveryNumpyDType) {
  for (DType dtype : {DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kInt16, DType::kInt32,
                      DType::kInt64, DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64, DType::kBool}) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3, 4}, Shape{0, 3}}) {
      const Tensor original = Pattern(dtype, shape);
      auto bytes = SerializeNpy(original, "t");
      ASSERT_TRUE(bytes.ok()) << bytes.status().message();
      // NumPy aligns the data to 64 bytes.
      EXPECT_EQ((bytes->size() - original.bytes()) % 64, 0u);
      auto back = ParseNpy(*bytes, "t");
      ASSERT_TRUE(back.ok()) << back.status().message();
      EXPECT_TRUE(SameTensor(*back, original)) << DTypeName(dtype) << " " << ShapeToString(shape);
    }
  }
}

TEST(NpyTest, Bfloat16IsRefusedBothWays) {
  auto written = SerializeNpy(Pattern(DType::kBFloat16, {2}), "w");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), ErrorCode::kUnsupported);
  auto read = ParseNpy(NpyWithHeader("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", "abcd"),
                       "x.npy");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(read.status().message().find("x.npy: dtype '<V2'"), std::string::npos) << read.status().message();
}

TEST(NpyTest, MalformedFilesAreErrors) {
  const std::string payload(8, '\0');
  struct Case {
    std::string bytes;
    std::string expected;
  };
  const Case cases[] = {
      {"not numpy", "bad magic"},
      {NpyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", payload), "'>f4' is not supported"},
      {NpyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", payload), "Fortran-order"},
      {NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", payload), "holds 8 bytes"},
      {NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", payload), "malformed shape"},
      {NpyWithHeader("{'descr': '<f4', 'shape': (2,), }", payload), "lacks descr"},
      {NpyWithHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x07", 2)),
       "other than 0 or 1"},
      // 2^21 * 2^21 * 2^21 elements: the byte count would overflow 64 bits.
      {NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2097152, 2097152, 2097152), }", payload),
       "elements"},
      {NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(70, '1') + ",), }", payload),
       "dimension too large"},
  };
  for (const Case& c : cases) {
    auto tensor = ParseNpy(c.bytes, "bad.npy");
    ASSERT_FALSE(tensor.ok()) << c.expected;
    EXPECT_NE(tensor.status().message().find(c.expected), std::string::npos) << tensor.status().message();
    EXPECT_EQ(tensor.status().message().rfind("bad.npy: ", 0), 0u) << tensor.status().message();
  }
  // A version 2.0 header claiming 16 MiB (the limit is 1 MiB), in a file long enough to hold it.
  std::string huge_header = "\x93NUMPY\x02";
  huge_header += std::string("\0\0\0\0\x01", 5);  // header length 0x01000000, little-endian
  huge_header.resize(huge_header.size() + (size_t{16} << 20), ' ');
  auto refused = ParseNpy(huge_header, "huge.npy");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("header of 16777216 bytes exceeds the limit"), std::string::npos)
      << refused.status().message();
  const std::string good = NpyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", payload);
  for (size_t cut : {size_t{5}, size_t{40}, good.size() - 1}) {
    EXPECT_FALSE(ParseNpy(good.substr(0, cut), "cut.npy").ok()) << cut;
  }
}

TEST(NpzTest, FileRoundTrip) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "npz_test";
  std::filesystem::create_directories(dir);
  const std::vector<NamedTensor> arrays = {{"input.1", Pattern(DType::kFloat32, {2, 3})},
                                           {"ids", Pattern(DType::kInt64, {4})},
                                           {"mask", Pattern(DType::kBool, {})}};
  ASSERT_TRUE(WriteNpzFile(dir / "a.npz", arrays).ok());
  auto back = ReadNpzFile(dir / "a.npz");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  for (size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ((*back)[i].name, arrays[i].name);
    EXPECT_TRUE(SameTensor((*back)[i].tensor, arrays[i].tensor)) << arrays[i].name;
  }
}

TEST(NpzTest, WriteRejectsDuplicateNames) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "dup.npz";
  const Status status = WriteNpzFile(path, {{"a", Pattern(DType::kFloat32, {1})}, {"a", Pattern(DType::kFloat32, {1})}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(NpzTest, CorruptArchivesAreErrors) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "c.npz";
  ASSERT_TRUE(WriteNpzFile(path, {{"x", Pattern(DType::kFloat32, {16})}}).ok());
  std::string bytes;
  {
    auto arrays = ReadNpzFile(path);
    ASSERT_TRUE(arrays.ok());
    std::FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char chunk[4096];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.append(chunk, n);
    std::fclose(f);
  }
  // Every truncation fails cleanly.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) EXPECT_FALSE(ParseNpz(bytes.substr(0, cut), "c.npz").ok()) << cut;
  // A flipped payload byte breaks the CRC.
  std::string flipped = bytes;
  flipped[30 + 5 + 80] ^= 0x40;
  auto corrupt = ParseNpz(flipped, "c.npz");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("c.npz: array 'x': CRC mismatch"), std::string::npos)
      << corrupt.status().message();
  EXPECT_EQ(ReadNpzFile(path.string() + ".missing").status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace onnx_amp
