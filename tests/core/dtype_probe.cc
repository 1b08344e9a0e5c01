// Converts raw little-endian bit patterns with one conversion path, so that
// float_reference_test.py can compare our bits with NumPy's float16 and
// ml_dtypes' bfloat16.
//
//   dtype_probe paths                              supported paths, one a line
//   dtype_probe CONVERSION PATH INPUT OUTPUT       convert a file of bit patterns
//
// CONVERSION: f32-to-f16 | f32-to-bf16 | f16-to-f32 | bf16-to-f32 (float32 files hold
// uint32 patterns, float16/bfloat16 files uint16). PATH: a name from `paths`, or
// "dispatch" for the path the library picks on its own.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/convert.h"

namespace onnx_amp {
namespace {

constexpr ConvertPath kAllPaths[] = {ConvertPath::kScalar, ConvertPath::kAvx2F16c, ConvertPath::kAvx512,
                                     ConvertPath::kAvx512Bf16};

template <typename T>
std::optional<std::vector<T>> ReadPatterns(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % sizeof(T) != 0) return std::nullopt;
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

template <typename T>
bool WritePatterns(const std::string& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
  return static_cast<bool>(out);
}

// Narrowing conversions: float32 patterns in, 16-bit patterns out.
template <typename Convert>
int Narrow(const std::string& input, const std::string& output, Convert convert) {
  const std::optional<std::vector<float>> src = ReadPatterns<float>(input);
  if (!src) {
    std::cerr << "dtype_probe: cannot read float32 patterns from " << input << "\n";
    return 1;
  }
  std::vector<uint16_t> dst(src->size());
  convert(src->data(), dst.data(), src->size());
  if (!WritePatterns(output, dst)) {
    std::cerr << "dtype_probe: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}

// Widening conversions: 16-bit patterns in, float32 patterns out.
template <typename Convert>
int Widen(const std::string& input, const std::string& output, Convert convert) {
  const std::optional<std::vector<uint16_t>> src = ReadPatterns<uint16_t>(input);
  if (!src) {
    std::cerr << "dtype_probe: cannot read 16-bit patterns from " << input << "\n";
    return 1;
  }
  std::vector<float> dst(src->size());
  convert(src->data(), dst.data(), src->size());
  if (!WritePatterns(output, dst)) {
    std::cerr << "dtype_probe: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}

int Run(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "paths") {
    for (ConvertPath path : kAllPaths) {
      if (ConvertPathSupported(path)) std::cout << ConvertPathName(path) << "\n";
    }
    return 0;
  }
  if (argc != 5) {
    std::cerr << "usage: dtype_probe paths | dtype_probe CONVERSION PATH INPUT OUTPUT\n";
    return 2;
  }
  const std::string_view conversion = argv[1];
  const std::string_view path_name = argv[2];
  const std::string input = argv[3];
  const std::string output = argv[4];

  std::optional<ConvertPath> path;  // nullopt: the library's own dispatch
  if (path_name != "dispatch") {
    for (ConvertPath candidate : kAllPaths) {
      if (ConvertPathName(candidate) == path_name) path = candidate;
    }
    if (!path) {
      std::cerr << "dtype_probe: unknown path '" << path_name << "'\n";
      return 2;
    }
    if (!ConvertPathSupported(*path)) {
      std::cerr << "dtype_probe: path '" << path_name << "' is not supported by this CPU\n";
      return 2;
    }
  }

  if (conversion == "f32-to-f16") {
    return Narrow(input, output, [&](const float* src, uint16_t* dst, size_t n) {
      path ? ConvertFloatToHalfWith(*path, src, dst, n) : ConvertFloatToHalf(src, dst, n);
    });
  }
  if (conversion == "f32-to-bf16") {
    return Narrow(input, output, [&](const float* src, uint16_t* dst, size_t n) {
      path ? ConvertFloatToBFloat16With(*path, src, dst, n) : ConvertFloatToBFloat16(src, dst, n);
    });
  }
  if (conversion == "f16-to-f32") {
    return Widen(input, output, [&](const uint16_t* src, float* dst, size_t n) {
      path ? ConvertHalfToFloatWith(*path, src, dst, n) : ConvertHalfToFloat(src, dst, n);
    });
  }
  if (conversion == "bf16-to-f32") {
    return Widen(input, output, [&](const uint16_t* src, float* dst, size_t n) {
      path ? ConvertBFloat16ToFloatWith(*path, src, dst, n) : ConvertBFloat16ToFloat(src, dst, n);
    });
  }
  std::cerr << "dtype_probe: unknown conversion '" << conversion << "'\n";
  return 2;
}

}  // namespace
}  // namespace onnx_amp

int main(int argc, char** argv) { return onnx_amp::Run(argc, argv); }
