// --max-memory for the commands that run models (run, validate, train): a cap on what
// one run of the executor allocates for node outputs, given as a byte count with an
// optional K/M/G/T suffix. Without it the cap is this machine's physical memory.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

void AddMaxMemoryFlag(CLI::App& command, std::string& text);

// The cap in bytes for ExecutorOptions::max_memory_bytes (0 when the flag is absent).
Expected<size_t> ParseMaxMemoryFlag(const std::string& text);

}  // namespace onnx_amp
