// Helpers shared by the onnx I/O tests: a self-removing temporary folder, file
// read/write, and the folders CMake passes in.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/onnx/model_io.h"

namespace onnx_amp::testing {

// Written by make_test_models.py (a ctest fixture) into the build folder.
inline std::filesystem::path GeneratedModels() { return ONNX_AMP_TEST_GENERATED_MODELS; }
inline std::filesystem::path BackendTestData() { return ONNX_AMP_BACKEND_TEST_DATA; }
inline std::filesystem::path TestPython() { return ONNX_AMP_TEST_PYTHON; }
inline std::filesystem::path CheckSavedModelScript() { return ONNX_AMP_TEST_CHECK_SAVED_MODEL; }

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string label = test != nullptr ? std::string(test->name()) : "onnx";
    path_ = std::filesystem::temp_directory_path() /
            ("onnx_amp_" + label + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// Single-quotes a path for /bin/sh.
inline std::string ShellQuote(const std::filesystem::path& path) {
  std::string quoted = "'";
  for (const char c : path.string()) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

inline std::string Serialized(const onnx::ModelProto& model) {
  Expected<std::string> bytes = SerializeModel(model);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : std::string();
}

}  // namespace onnx_amp::testing
