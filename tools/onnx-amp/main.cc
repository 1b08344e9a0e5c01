// onnx-amp: mixed-precision tools for ONNX models.
//
// Adding a subcommand: write cmd_<name>.cc defining Add<Name>Command(CLI::App&,
// CommandRunner&) (declare it in command.h, list the file in CMakeLists.txt) and
// register it below with one line. The action returns a Status; main prints a failed
// one as "onnx-amp: error: <message>" and exits 1 (2 for kInvalidArgument). CLI11 usage
// errors exit 2; --help and --version exit 0.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "ops/common/bf16_kernel_choice.h"
#include "ops/common/cpu_clones.h"
#include "ops/common/few_rows_matmul.h"
#include "ops/conv/few_channels_conv.h"
#include "ops/conv/few_pixels_conv.h"
#include "ops/conv/winograd_choice.h"
#include "runtime/core/cpu_isa_cap.h"
#include "runtime/exec/host_heap.h"
#include "tools/onnx-amp/cli_errors.h"
#include "tools/onnx-amp/command.h"
#include "tools/onnx-amp/device_flag.h"

namespace {

// A line naming ONNX_AMP_MAX_CPU_ISA when it caps the instruction sets.
std::string IsaCapText() {
  const onnx_amp::CpuIsa cap = onnx_amp::MaxCpuIsa();
  if (cap == onnx_amp::CpuIsa::kAvx512Bf16) return "";
  const std::string name(onnx_amp::CpuIsaName(cap));
  const char* onednn = std::getenv("ONEDNN_MAX_CPU_ISA");
  return "\nCPU: ONNX_AMP_MAX_CPU_ISA=" + name + ": our kernels capped at " + name + ", oneDNN's " +
         (onednn != nullptr ? "by ONEDNN_MAX_CPU_ISA=" + std::string(onednn) : "at " + name + " too");
}

// The version, the CPU's kernel choices (bfloat16 products, products of a few rows,
// first-layer convolutions, convolutions of a few pixels, Winograd convolutions, the
// element-wise loops' clone), and
// with CUDA compiled in a line with the CUDA runtime, cuBLASLt and cuDNN versions loaded
// and built against.
std::string VersionText() {
  const std::string cpu = "\nCPU: " + onnx_amp::DescribeBf16Kernels() + "\nCPU: products of at most " +
                          std::to_string(onnx_amp::kFewRowsMax) + " rows: " +
                          (onnx_amp::CurrentFewRowsPath() == onnx_amp::FewRowsPath::kNone
                               ? std::string("oneDNN's kernels (no AVX2 with FMA and F16C)")
                               : std::string(onnx_amp::FewRowsPathName(onnx_amp::CurrentFewRowsPath())) +
                                     " kernels streaming the weights once") +
                          "\nCPU: " + onnx_amp::DescribeFewChannelsConv() + "\nCPU: " + onnx_amp::DescribeFewPixelsConv() +
                          "\nCPU: " + onnx_amp::DescribeWinograd() + "\nCPU: " + onnx_amp::DescribeCpuClones() +
                          IsaCapText();
#if ONNX_AMP_WITH_CUDA
  return std::string("onnx-amp ") + ONNX_AMP_VERSION + " (CUDA support: compiled in)" + cpu + "\n" +
         onnx_amp::DeviceLibraryVersions();
#else
  return std::string("onnx-amp ") + ONNX_AMP_VERSION + " (CUDA support: not compiled in)" + cpu;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onnx_amp;
  FixHeapThresholds();
  CLI::App app{"onnx-amp: mixed-precision conversion, execution, validation and training for ONNX models"};
  app.set_version_flag("--version", VersionText);
  app.require_subcommand(0, 1);

  CommandRunner runner;
  AddInspectCommand(app, runner);
  AddConvertCommand(app, runner);
  AddRunCommand(app, runner);
  AddValidateCommand(app, runner);
  AddTrainCommand(app, runner);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);  // prints help, the version, or the usage error
    return code == 0 ? kExitSuccess : kExitUsage;
  }
  if (!runner.chosen()) {
    std::fputs(app.help().c_str(), stdout);
    return kExitSuccess;
  }
  // Libraries report errors as Status; this only catches what slips out of them
  // (allocation failures, protobuf or ONNX exceptions), so that no input crashes the tool.
  Status status;
  try {
    status = runner.Run();
  } catch (const std::exception& error) {
    status = InternalError(std::string("unexpected exception: ") + error.what());
  }
  return ReportStatus(status);
}
