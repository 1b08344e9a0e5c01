#include "runtime/dist/stop_message.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace onnx_amp {
namespace {

// Formatted once at install time: a signal handler may only call async-signal-safe functions.
char g_message[256];
size_t g_length = 0;

void OnStopSignal(int signal_number) {
  const ssize_t written = write(STDERR_FILENO, g_message, g_length);
  (void)written;
  // Die of the same signal, as without the handler, so the launcher sees the usual status.
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

void InstallStopMessage(int rank, int ranks) {
  const int length = std::snprintf(g_message, sizeof(g_message),
                                   "onnx-amp: error: rank %d of %d was stopped by the launcher: another rank failed "
                                   "or the job was cancelled\n",
                                   rank, ranks);
  g_length = length > 0 ? std::strlen(g_message) : 0;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP}) sigaction(signal_number, &action, nullptr);
}

void RemoveStopMessage() {
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP}) ::signal(signal_number, SIG_DFL);
}

}  // namespace onnx_amp
