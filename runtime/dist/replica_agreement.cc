#include "runtime/dist/replica_agreement.h"

#include <limits>
#include <string>

namespace onnx_amp {

Status AgreeOnSkipOver(Communicator& host, bool& skip, int64_t& first_non_finite, int64_t step) {
  // MAX of the negated index is the lowest index; "none" sits below every negated index.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  int64_t values[2] = {skip ? 1 : 0, first_non_finite >= 0 ? -first_non_finite : kNone};
  ONNX_AMP_RETURN_IF_ERROR(host.AllReduce(values, 2, DType::kInt64, ReduceOp::kMax,
                                          "the skip agreement of step " + std::to_string(step)));
  skip = values[0] != 0;
  first_non_finite = values[1] == kNone ? -1 : -values[1];
  return Status::Ok();
}

Status CheckSameStateOver(Communicator& host, uint64_t fingerprint, std::string_view what) {
  // MAX of {f, -f} gives the largest and the smallest fingerprint; they differ iff some
  // rank differs. Dropping the top bit keeps -f representable.
  const int64_t mine = static_cast<int64_t>(fingerprint >> 1);
  int64_t values[2] = {mine, -mine};
  ONNX_AMP_RETURN_IF_ERROR(
      host.AllReduce(values, 2, DType::kInt64, ReduceOp::kMax, "the replica check of the " + std::string(what)));
  if (values[0] == -values[1]) return Status::Ok();
  return InvalidArgument("the ranks do not hold the same " + std::string(what) + " (this is rank " +
                         std::to_string(host.rank()) + " of " + std::to_string(host.size()) +
                         "): give every rank the same model, data and flags, and a --checkpoint-dir that every rank "
                         "reads");
}

}  // namespace onnx_amp
