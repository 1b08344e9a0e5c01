// Subcommands of onnx-amp. Each lives in its own cmd_<name>.cc, which defines
// Add<Name>Command: it adds a CLI11 subcommand with its options and binds the action
// that runs when the user picks it. main.cc registers each with one line.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "runtime/core/status.h"

namespace onnx_amp {

// Holds the action of the chosen subcommand. Actions run after parsing has finished,
// so usage errors (CLI11, exit 2) and run errors (Status, exit 1) stay apart.
class CommandRunner {
 public:
  using Action = std::function<Status()>;

  // `action` runs when `command` is on the command line.
  void Bind(CLI::App& command, Action action);
  bool chosen() const { return static_cast<bool>(action_); }
  Status Run() const { return action_(); }

 private:
  Action action_;
};

void AddInspectCommand(CLI::App& app, CommandRunner& runner);
void AddConvertCommand(CLI::App& app, CommandRunner& runner);
void AddRunCommand(CLI::App& app, CommandRunner& runner);
void AddValidateCommand(CLI::App& app, CommandRunner& runner);
void AddTrainCommand(CLI::App& app, CommandRunner& runner);

}  // namespace onnx_amp
