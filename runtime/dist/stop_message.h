// What a rank says when the launcher ends it. When one rank of an mpirun job dies or fails,
// mpirun sends SIGTERM to the others; by default they would vanish without a word, leaving
// only mpirun's note about the failed rank. With this handler each of them writes one line
// ("rank 1 of 2 was stopped by the launcher: another rank failed or the job was cancelled")
// and then dies of the signal as before. Checkpoints are written atomically, so a rank
// stopped mid-write leaves the previous checkpoint intact.
#pragma once

namespace onnx_amp {

// Installs the handler for SIGTERM, SIGINT and SIGHUP (only under a launcher).
void InstallStopMessage(int rank, int ranks);
// Back to the default handlers: for a rank that has reported its own error and is ending the
// job, where "stopped by the launcher" would only repeat the cause.
void RemoveStopMessage();

}  // namespace onnx_amp
