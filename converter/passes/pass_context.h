// PassContext: what every conversion pass reads and writes, so that all of them share
// one signature (Pass) and run from one list (pass_list.h), and a test can run any one
// of them alone on a painted plan.
#pragma once

#include "converter/passes/unique_names.h"
#include "converter/plan.h"
#include "converter/report.h"
#include "runtime/core/status.h"

namespace onnx_amp {

struct StreamedInitializers;  // convert_initializers.h

struct PassContext {
  ConversionPlan& plan;             // the painted model; passes keep its dtype maps current
  UniqueNames& names;               // names for new Casts and initializer copies
  ConversionReport& report;         // counters and clamp records; report.opset is the output opset
  StreamedInitializers& streamed;   // external initializers converted while the model is written
};

using Pass = Status (*)(PassContext& context);

}  // namespace onnx_amp
