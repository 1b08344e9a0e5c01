// Training checkpoints: master weights, optimizer slots and step count, loss-scaler
// state and the data position, in one .npz written atomically (temporary file, fsync,
// rename). Loading restores them so that the run continues bit-identically.
#pragma once

#include <cstdint>
#include <filesystem>

#include "runtime/core/status.h"
#include "runtime/train/trainer.h"

namespace onnx_amp {

// Where the data stream stands: the shuffle of epoch `epoch` comes from the seed, so
// (seed, epoch, batch) is the whole generator state.
struct DataPosition {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t batch = 0;        // next batch within the epoch
  int64_t global_step = 0;  // optimizer steps taken or skipped
  int64_t ranks = 1;        // data-parallel ranks the batches were split over
};

// Written only between steps (after the scaler's Update()).
Status SaveCheckpoint(const std::filesystem::path& path, Trainer& trainer, const DataPosition& position);
// Errors name the file and the array that is missing or does not match the model.
Status LoadCheckpoint(const std::filesystem::path& path, Trainer& trainer, DataPosition& position);

}  // namespace onnx_amp
