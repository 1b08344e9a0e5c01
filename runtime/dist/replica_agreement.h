// The small host-memory collectives every ReplicaSync makes the same way, whether its
// gradients are summed in host memory (gradient_sync.h) or on the GPUs
// (device_gradient_sync.h): the skip decision, and the check that every rank holds the same
// state.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/core/status.h"
#include "runtime/dist/communicator.h"

namespace onnx_amp {

// ReplicaSync::AgreeOnSkip over `host`: a MAX all-reduce of {skip, -first non-finite
// index}, so every rank skips when any rank does and names the lowest index any rank found.
Status AgreeOnSkipOver(Communicator& host, bool& skip, int64_t& first_non_finite, int64_t step);

// ReplicaSync::CheckSameState over `host`: fails on every rank, naming `what`, unless every
// rank passes the same `fingerprint`.
Status CheckSameStateOver(Communicator& host, uint64_t fingerprint, std::string_view what);

}  // namespace onnx_amp
