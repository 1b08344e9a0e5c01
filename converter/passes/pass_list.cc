#include "converter/passes/pass_list.h"

#include "converter/passes/convert_initializers.h"
#include "converter/passes/insert_casts.h"
#include "converter/passes/retarget_casts.h"
#include "converter/passes/retype_values.h"
#include "converter/passes/rewrite_attributes.h"

namespace onnx_amp {
namespace {

// Why this order:
// - RetargetCasts and RewriteAttributes only rewrite attributes of nodes Paint painted
//   low; they read the plan as Paint left it and change no value's dtype or name, so
//   they come first. RewriteAttributes before ConvertInitializers keeps the report's
//   clamp records in the order they have always had (Constants, then initializers).
// - ConvertInitializers before InsertCasts: an initializer converted (or duplicated) to
//   the low dtype has its new dtype in plan.values by the time InsertCasts compares
//   dtypes, so it gets no Cast; the other order would cast weights at run time.
// - InsertCasts after every pass that sets a value's dtype: it casts wherever a reader
//   wants another dtype than the value now has, and renames low graph outputs.
// - RetypeValues last: it writes the final dtypes (those of InsertCasts' renamed outputs
//   and initializer copies included) into the declared graph input/output/value_info types.
constexpr NamedPass kConversionPasses[] = {
    {"retarget_casts", RetargetCasts},
    {"rewrite_attributes", RewriteAttributes},
    {"convert_initializers", ConvertInitializers},
    {"insert_casts", InsertCasts},
    {"retype_values", RetypeValues},
};

}  // namespace

std::span<const NamedPass> ConversionPasses() { return kConversionPasses; }

Status RunConversionPasses(PassContext& context) {
  for (const NamedPass& pass : ConversionPasses()) {
    ONNX_AMP_RETURN_IF_ERROR(pass.run(context));
  }
  return Status::Ok();
}

}  // namespace onnx_amp
