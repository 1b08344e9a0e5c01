// The output opset, settled before painting. Under the portable target an op runs in
// the low dtype only where its ONNX schema at the model opset admits it, and many do so
// only from a newer opset (bfloat16: Conv, ConvTranspose, MaxPool, AveragePool,
// GlobalAveragePool, InstanceNormalization and the RNNs from 22, BatchNormalization from 14;
// float16: CumSum from 14, IsInf from 20). So by default the converter finds, for every
// node (all scopes) that could run low, the first opset whose schema admits the low
// dtype for each of its float32 type variables, and raises the model's default-domain
// opset to the newest such opset with ONNX's version converter. `--opset N` pins the
// opset instead; `--keep-opset` keeps it, and the nodes that need a newer one stay
// float32. When the version converter cannot raise the opset (it lacks an adapter,
// BatchNormalization with training outputs, sparse initializers) or would lose part of
// the model (model-local functions, training info), the opset is kept and the decision
// says why; the conversion itself still succeeds.
//
// A node could run low when its class under the policy (ops.def after the user's
// overrides) is allow, infer or clear, and all of a type variable's values are float32,
// as Paint's eligibility rule says (paint.h, step 2); whether painting then makes it low
// depends on its neighbours.
//
// Large models: the version converter rebuilds the model through ONNX's IR, so it
// holds every tensor that is in memory twice while it runs. Tensors left in their
// external files (LoadOptions::keep_external_from_bytes) reach it as empty
// placeholders and get their file references back afterwards, so a streamed model's
// weights are never read for the upgrade.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "converter/paint.h"
#include "converter/plan.h"
#include "converter/precision_policy.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx_amp {

// One op whose nodes could run low but whose schema at the model opset does not admit
// the low dtype.
struct OpsetNeed {
  std::string op;      // default-domain op type
  int64_t opset = 0;   // the first opset whose schema admits the low dtype for its nodes
  int64_t nodes = 0;   // how many of its nodes (all scopes) need that opset
};

enum class OpsetAction {
  kKept,           // no op needs a newer opset (or nothing runs low)
  kRaised,         // raised to the newest opset the needs name (failure: a further raise failed)
  kPinned,         // --opset N
  kKeptByRequest,  // --keep-opset: the nodes that need a newer opset stay float32
  kKeptOnFailure,  // the version converter could not raise it: those nodes stay float32
};

std::string_view OpsetActionName(OpsetAction action);

struct OpsetDecision {
  OpsetAction action = OpsetAction::kKept;
  int64_t from = 0;  // the input model's default-domain opset
  int64_t to = 0;    // the output model's
  DType low_type = DType::kFloat32;
  // Found at `from`, or at the pinned opset; newest opset first, then most nodes first.
  std::vector<OpsetNeed> needs;
  std::string failure;  // why the opset could not be raised (further)

  // Nodes that stay float32 because the output opset is older than their op needs.
  int64_t NodesBelowNeededOpset() const;
};

// One line for the convert summary, inspect and validate, e.g.
//   "opset 13 -> 22 (bfloat16 Conv, MaxPool need opset 22)"
//   "29 nodes stayed float32: their ops accept bfloat16 only from opset 22 (Conv, MaxPool)
//    (drop --keep-opset to raise the opset)"
// Empty when the opset was kept and nothing needed a newer one.
std::string DescribeOpsetDecision(const OpsetDecision& decision);

struct OpsetRequest {
  std::optional<int64_t> pin;  // --opset N
  bool keep = false;           // --keep-opset
};

// The model as it will be painted: its opset settled and its value types inferred.
struct SettledOpset {
  OpsetDecision decision;
  ValueTable types;
  // When the opset was raised: the model as it was before, to fall back to when the
  // raised one fails later (SettleAfterFailedRaise).
  std::optional<onnx::ModelProto> unraised;
};

// Settles `model`'s opset (the header comment) and infers its value types. Errors:
// kInvalidArgument when both pin and keep are set, or when the pinned opset cannot be
// reached; kInvalidModel when type inference rejects the model. `external_data_folder`
// is where tensors left in their files resolve (empty when all are in memory).
// `inferred`, when given, is InferValueTypes(model) of `model` as passed: used unless a
// pinned opset changes the model first.
Expected<SettledOpset> SettleOpset(onnx::ModelProto& model, const OpsetRequest& request, const PrecisionPolicy& policy,
                                   ConvertTarget target, const std::filesystem::path& external_data_folder,
                                   std::optional<Expected<ValueTable>> inferred = std::nullopt);

// For a model whose raised version (to `raised_to`) failed to convert with `failure`:
// settles `unraised` at its own opset, the decision (kKeptOnFailure) saying why.
Expected<SettledOpset> SettleAfterFailedRaise(onnx::ModelProto& unraised, int64_t raised_to, const Status& failure,
                                              const PrecisionPolicy& policy, ConvertTarget target);

// The ops of `model` (typed by `types`) whose nodes could run low under `policy` but
// need a newer opset for it; empty unless the target is portable and the policy has a
// low dtype with fast arithmetic on its hardware. Only opsets this ONNX build knows
// count; ops that admit the low dtype at no opset are left out.
std::vector<OpsetNeed> FindOpsetNeeds(const onnx::ModelProto& model, const ValueTable& types,
                                      const PrecisionPolicy& policy, ConvertTarget target);

// The default-domain opset `model` imports; 0 when it imports none.
int64_t DefaultOpset(const onnx::ModelProto& model);

// `model` converted to default-domain `opset` by ONNX's version converter; tensors left
// in their external files keep their file references. Fails (kInvalidArgument, saying
// why) when the converter fails or would drop model-local functions or training info.
Expected<onnx::ModelProto> ChangeOpset(const onnx::ModelProto& model, int64_t opset);

}  // namespace onnx_amp
