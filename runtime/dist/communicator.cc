#include "runtime/dist/communicator.h"

namespace onnx_amp {
namespace {

// A collective that ran to completion when it was started.
class CompletedCollective final : public PendingCollective {
 public:
  Expected<bool> Test() override { return true; }
  Status Wait() override { return Status::Ok(); }
};

}  // namespace

Expected<std::unique_ptr<PendingCollective>> Communicator::StartAllReduce(void* data, int64_t count, DType dtype,
                                                                          ReduceOp op, std::string_view what) {
  ONNX_AMP_RETURN_IF_ERROR(AllReduce(data, count, dtype, op, what));
  return std::unique_ptr<PendingCollective>(new CompletedCollective());
}

}  // namespace onnx_amp
