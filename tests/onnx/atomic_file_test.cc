#include "runtime/onnx/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / ("atomic_file_test_" + std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  void Touch(const std::string& name) { std::ofstream(folder_ / name) << "partial"; }

  fs::path folder_;
};

// The id of a process that has exited and been reaped.
pid_t DeadProcessId() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST_F(AtomicFileTest, CommitReplacesTheTargetAndLeavesNoTemporary) {
  {
    std::ofstream(folder_ / "weights.npz") << "old";
  }
  auto writer = AtomicFileWriter::Create(folder_ / "weights.npz");
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE(writer->Write("new", 3).ok());
  ASSERT_TRUE(writer->Commit().ok());
  std::string content;
  std::ifstream(folder_ / "weights.npz") >> content;
  EXPECT_EQ(content, "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(folder_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFileTest, ADroppedWriterRemovesItsTemporary) {
  {
    auto writer = AtomicFileWriter::Create(folder_ / "weights.npz");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Write("abc", 3).ok());
  }
  EXPECT_TRUE(fs::is_empty(folder_));
}

TEST_F(AtomicFileTest, TheNextWriterRemovesAKilledWritersTemporaryButNotALiveOnes) {
  const std::string dead = ".weights.npz.tmp-" + std::to_string(DeadProcessId()) + "-0";
  const std::string live = ".weights.npz.tmp-" + std::to_string(::getppid()) + "-0";
  const std::string other_target = ".other.npz.tmp-" + std::to_string(DeadProcessId()) + "-0";
  Touch(dead);
  Touch(live);
  Touch(other_target);
  auto writer = AtomicFileWriter::Create(folder_ / "weights.npz");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Commit().ok());
  EXPECT_FALSE(fs::exists(folder_ / dead));
  EXPECT_TRUE(fs::exists(folder_ / live));
  EXPECT_TRUE(fs::exists(folder_ / other_target));
  EXPECT_TRUE(fs::exists(folder_ / "weights.npz"));
}

}  // namespace
}  // namespace onnx_amp
