// The caching device pool: blocks come back on release and serve later requests of a
// size that fits, the raw allocator is reached only for new sizes, and a failed raw
// allocation frees the cache and tries again.
#include "runtime/exec/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <vector>

namespace onnx_amp {
namespace {

// Host memory standing in for a device; optionally refuses past a byte budget.
class CountingMemory final : public RawDeviceMemory {
 public:
  explicit CountingMemory(size_t budget = SIZE_MAX, int* frees = nullptr) : budget_(budget), frees_(frees) {}
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  Expected<void*> Allocate(size_t bytes) override {
    if (bytes > budget_ - used_) return Unsupported("out of memory");
    used_ += bytes;
    void* data = std::malloc(bytes);
    sizes_[data] = bytes;
    return data;
  }
  void Free(void* data) override {
    if (frees_ != nullptr) ++*frees_;
    used_ -= sizes_[data];
    sizes_.erase(data);
    std::free(data);
  }

 private:
  size_t budget_;
  size_t used_ = 0;
  int* frees_;
  std::map<void*, size_t> sizes_;
};

TEST(CachingAllocatorTest, RoundsSmallSizesTo512AndLargeTo2MiB) {
  EXPECT_EQ(CachingAllocator::RoundedSize(0), 512u);
  EXPECT_EQ(CachingAllocator::RoundedSize(1), 512u);
  EXPECT_EQ(CachingAllocator::RoundedSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::RoundedSize((1u << 20) - 1), 1u << 20);
  EXPECT_EQ(CachingAllocator::RoundedSize((1u << 20) + 1), 2u << 20);
  EXPECT_EQ(CachingAllocator::RoundedSize((5u << 20) + 7), 6u << 20);
}

TEST(CachingAllocatorTest, ReleasedBlockServesTheNextRequestThatFits) {
  auto pool = CachingAllocator::Create(std::make_unique<CountingMemory>());
  void* first = nullptr;
  {
    Expected<std::shared_ptr<Buffer>> a = pool->Allocate(1000);
    ASSERT_TRUE(a.ok());
    first = (*a)->data();
    EXPECT_EQ((*a)->device(), DeviceKind::kCuda);
    EXPECT_EQ((*a)->bytes(), 1000u);
    EXPECT_EQ(pool->stats().cached_bytes, 0u);
  }
  EXPECT_EQ(pool->stats().cached_bytes, 1024u) << "the dead buffer's block is cached";
  Expected<std::shared_ptr<Buffer>> b = pool->Allocate(900);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->data(), first);
  EXPECT_EQ(pool->stats().raw_allocations, 1);
  EXPECT_EQ(pool->stats().reuses, 1);
}

TEST(CachingAllocatorTest, BlocksMuchLargerThanTheRequestAreNotTaken) {
  auto pool = CachingAllocator::Create(std::make_unique<CountingMemory>());
  { ASSERT_TRUE(pool->Allocate(64u << 20).ok()); }
  Expected<std::shared_ptr<Buffer>> small = pool->Allocate(4u << 20);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(pool->stats().raw_allocations, 2) << "a 64 MiB block would waste 60 MiB on a 4 MiB tensor";
  EXPECT_EQ(pool->stats().cached_bytes, 64u << 20);
}

TEST(CachingAllocatorTest, ATrainingStepPatternReachesTheRawAllocatorOnlyInTheFirstStep) {
  auto pool = CachingAllocator::Create(std::make_unique<CountingMemory>());
  const size_t sizes[] = {3 << 20, 4096, 3 << 20, 100, 7 << 20, 4096};
  for (int step = 0; step < 5; ++step) {
    std::vector<std::shared_ptr<Buffer>> live;
    for (size_t bytes : sizes) {
      Expected<std::shared_ptr<Buffer>> buffer = pool->Allocate(bytes);
      ASSERT_TRUE(buffer.ok());
      live.push_back(*buffer);
    }
  }
  EXPECT_EQ(pool->stats().raw_allocations, 6);
  EXPECT_EQ(pool->stats().reuses, 4 * 6);
}

TEST(CachingAllocatorTest, OutOfMemoryFreesTheCacheAndRetries) {
  int frees = 0;
  auto pool = CachingAllocator::Create(std::make_unique<CountingMemory>(6u << 20, &frees));
  { ASSERT_TRUE(pool->Allocate(4u << 20).ok()); }  // cached after this scope
  // A 5 MiB request (a 6 MiB block) does not fit the cached 4 MiB block, and 4 + 6 MiB
  // pass the budget: only with the cache given back does it succeed.
  Expected<std::shared_ptr<Buffer>> big = pool->Allocate(5u << 20);
  EXPECT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(frees, 1) << "the cached block was given back before the second try";
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  EXPECT_EQ(pool->stats().reserved_bytes, 6u << 20);
  Expected<std::shared_ptr<Buffer>> more = pool->Allocate(1u << 20);
  EXPECT_FALSE(more.ok()) << "nothing cached to free: the error comes through";
}

TEST(CachingAllocatorTest, BuffersKeepThePoolAlive) {
  std::shared_ptr<Buffer> survivor;
  int frees = 0;
  {
    auto pool = CachingAllocator::Create(std::make_unique<CountingMemory>(SIZE_MAX, &frees));
    Expected<std::shared_ptr<Buffer>> buffer = pool->Allocate(100);
    ASSERT_TRUE(buffer.ok());
    survivor = *buffer;
  }
  EXPECT_EQ(frees, 0);
  survivor.reset();
  EXPECT_EQ(frees, 1) << "the last buffer takes the pool, and its cache, with it";
}

// Capture mode: what a captured graph touches stays its own.
class CachingAllocatorCaptureTest : public ::testing::Test {
 protected:
  void* Take(size_t bytes) {
    Expected<std::shared_ptr<Buffer>> buffer = pool_->Allocate(bytes);
    EXPECT_TRUE(buffer.ok());
    held_.push_back(*buffer);
    return (*buffer)->data();
  }
  std::shared_ptr<Buffer> Hold(size_t bytes) {
    Expected<std::shared_ptr<Buffer>> buffer = pool_->Allocate(bytes);
    EXPECT_TRUE(buffer.ok());
    return *buffer;
  }
  std::unique_ptr<CapturePool> End() {
    Expected<std::unique_ptr<CapturePool>> handle = pool_->EndCapture();
    EXPECT_TRUE(handle.ok()) << handle.status().message();
    return handle.ok() ? std::move(*handle) : nullptr;
  }

  int frees_ = 0;
  std::shared_ptr<CachingAllocator> pool_ = CachingAllocator::Create(std::make_unique<CountingMemory>(SIZE_MAX, &frees_));
  std::vector<std::shared_ptr<Buffer>> held_;
};

TEST_F(CachingAllocatorCaptureTest, CapturedBlocksKeepTheirAddressesWhileTheGraphLives) {
  void* warm = Hold(4096)->data();  // cached on the shared list
  ASSERT_TRUE(pool_->BeginCapture().ok());
  EXPECT_TRUE(pool_->capturing());
  void* first = Hold(4096)->data();  // dies at once: back to the capture's pool
  EXPECT_EQ(first, warm) << "a free shared block moves over to the capture";
  void* second = Hold(4096)->data();
  EXPECT_EQ(second, first) << "within the capture, a block freed earlier serves the next request";
  std::unique_ptr<CapturePool> graph_memory = End();
  EXPECT_FALSE(pool_->capturing());
  EXPECT_EQ(pool_->stats().private_bytes, 4096u);
  EXPECT_EQ(pool_->stats().cached_bytes, 0u);
  // Replays write that block: eager work after the capture never gets it.
  for (int replay = 0; replay < 3; ++replay) EXPECT_NE(Take(4096), first);
  graph_memory.reset();
  EXPECT_EQ(pool_->stats().private_bytes, 0u);
  EXPECT_EQ(Hold(4096)->data(), first) << "the graph gone, its blocks serve everyone";
}

TEST_F(CachingAllocatorCaptureTest, SharedBlocksFreedDuringTheCaptureAreHeldBack) {
  std::shared_ptr<Buffer> input = Hold(1000);
  void* input_address = input->data();
  ASSERT_TRUE(pool_->BeginCapture().ok());
  input.reset();  // the captured work may read it on every replay
  EXPECT_EQ(pool_->stats().cached_bytes, 0u) << "no free into the shared list during a capture";
  EXPECT_NE(Take(1000), input_address);
  std::unique_ptr<CapturePool> graph_memory = End();
  EXPECT_NE(Take(1000), input_address);
  graph_memory.reset();
  EXPECT_EQ(Take(1000), input_address);
}

TEST_F(CachingAllocatorCaptureTest, AnOutputOutlivingTheGraphGoesToTheSharedListWhenItDies) {
  ASSERT_TRUE(pool_->BeginCapture().ok());
  std::shared_ptr<Buffer> output = Hold(2048);
  void* address = output->data();
  std::unique_ptr<CapturePool> graph_memory = End();
  output.reset();
  EXPECT_EQ(pool_->stats().cached_bytes, 0u) << "the graph still owns it";
  graph_memory.reset();
  EXPECT_EQ(pool_->stats().cached_bytes, 2048u);
  EXPECT_EQ(pool_->stats().private_bytes, 0u);
  std::shared_ptr<Buffer> again = Hold(2048);
  EXPECT_EQ(again->data(), address);
}

TEST_F(CachingAllocatorCaptureTest, AnOutputDyingAfterItsGraphGoesStraightToTheSharedList) {
  ASSERT_TRUE(pool_->BeginCapture().ok());
  std::shared_ptr<Buffer> output = Hold(2048);
  End().reset();  // the graph dies first
  EXPECT_EQ(pool_->stats().private_bytes, 2048u);
  output.reset();
  EXPECT_EQ(pool_->stats().private_bytes, 0u);
  EXPECT_EQ(pool_->stats().cached_bytes, 2048u);
}

TEST_F(CachingAllocatorCaptureTest, OneCaptureAtATime) {
  EXPECT_FALSE(pool_->EndCapture().ok());
  ASSERT_TRUE(pool_->BeginCapture().ok());
  EXPECT_FALSE(pool_->BeginCapture().ok());
  End();
}

TEST(CachingAllocatorCaptureBudgetTest, OutOfMemoryDuringACaptureFreesNothing) {
  int frees = 0;
  auto pool = CachingAllocator::Create(std::make_unique<CountingMemory>(3000, &frees));
  { ASSERT_TRUE(pool->Allocate(2048).ok()); }  // cached
  ASSERT_TRUE(pool->BeginCapture().ok());
  EXPECT_FALSE(pool->Allocate(1000).ok()) << "1024 + the cached 2048 pass the budget";
  EXPECT_EQ(frees, 0) << "freeing device memory waits for the device: never inside a capture";
  ASSERT_TRUE(pool->EndCapture().ok());
  EXPECT_TRUE(pool->Allocate(1000).ok()) << "outside a capture the cache is emptied and the request retried";
  EXPECT_EQ(frees, 1);
}

}  // namespace
}  // namespace onnx_amp
