// An in-process Communicator for tests: N ranks are N threads sharing a ThreadGroup. Each
// collective copies every rank's buffer into the group, waits for all ranks, and reduces
// them in rank order, so every rank gets the same bits (as MPI's reductions give in
// practice). Lets the gradient sync and the trainer's hook be tested without mpirun.
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/dist/communicator.h"

namespace onnx_amp::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), barrier_(size), slots_(static_cast<size_t>(size)) {}
  int size() const { return size_; }

  // Runs body(rank) on `size` threads and joins them.
  void Run(const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size_; ++rank) threads.emplace_back(body, rank);
    for (std::thread& thread : threads) thread.join();
  }

 private:
  friend class ThreadCommunicator;
  const int size_;
  std::barrier<> barrier_;
  std::vector<std::vector<char>> slots_;  // per rank, the bytes of the collective in flight
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  std::string_view backend() const override { return "threads"; }
  int64_t collectives() const { return collectives_; }

  Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, std::string_view) override {
    ++collectives_;
    const size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
    Publish(data, bytes);
    switch (dtype) {
      case DType::kFloat32: Reduce(static_cast<float*>(data), count, op); break;
      case DType::kFloat64: Reduce(static_cast<double*>(data), count, op); break;
      case DType::kInt64: Reduce(static_cast<int64_t*>(data), count, op); break;
      default: return InternalError("unsupported dtype");
    }
    group_.barrier_.arrive_and_wait();  // nobody reuses its slot before everyone has read
    return Status::Ok();
  }

  Status Broadcast(void* data, int64_t bytes, int root, std::string_view) override {
    ++collectives_;
    Publish(data, static_cast<size_t>(bytes));
    std::memcpy(data, group_.slots_[static_cast<size_t>(root)].data(), static_cast<size_t>(bytes));
    group_.barrier_.arrive_and_wait();
    return Status::Ok();
  }

 private:
  void Publish(const void* data, size_t bytes) {
    std::vector<char>& slot = group_.slots_[static_cast<size_t>(rank_)];
    slot.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    group_.barrier_.arrive_and_wait();
  }

  template <typename T>
  void Reduce(T* out, int64_t count, ReduceOp op) {
    for (int64_t i = 0; i < count; ++i) {
      T value = reinterpret_cast<const T*>(group_.slots_[0].data())[i];
      for (int r = 1; r < size(); ++r) {
        const T other = reinterpret_cast<const T*>(group_.slots_[static_cast<size_t>(r)].data())[i];
        value = op == ReduceOp::kSum ? value + other : (other > value ? other : value);
      }
      out[i] = value;
    }
  }

  ThreadGroup& group_;
  const int rank_;
  int64_t collectives_ = 0;
};

}  // namespace onnx_amp::testing
