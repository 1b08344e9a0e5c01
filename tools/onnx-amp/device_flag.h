// --device cpu|cuda and --allow-tf32 for the commands that run models (run, validate,
// train). `cuda` opens GPU 0 with the CUDA kernels; nodes they do not cover run on the
// CPU. Without a usable GPU, or in a build without CUDA, --device cuda is an error that
// says why.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "runtime/core/status.h"
#include "runtime/exec/device.h"

namespace onnx_amp {

struct DeviceFlags {
  std::string device = "cpu";
  bool allow_tf32 = false;
};

void AddDeviceFlags(CLI::App& command, DeviceFlags& flags);

// nullptr for --device cpu; for cuda, GPU `ordinal` opened (a data-parallel rank picks its
// own, train_distributed.h; every other run takes GPU 0).
Expected<std::unique_ptr<Device>> OpenDevice(const DeviceFlags& flags, int ordinal = 0);

// The libraries behind --device cuda, for --version: "CUDA runtime ..., cuBLASLt ...,
// cuDNN ... (built with ...)" from the CUDA backend, which this loads; where it cannot be
// loaded, the versions the build was made with and the reason.
std::string DeviceLibraryVersions();

}  // namespace onnx_amp
