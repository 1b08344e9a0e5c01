// onnx-amp: mixed-precision tools for ONNX models. Each subcommand lives in its own file.
#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  CLI::App app{"onnx-amp: mixed-precision conversion, execution, validation and training for ONNX models"};
  app.set_version_flag("--version", std::string("onnx-amp 0.1.0"));
  app.require_subcommand(0, 1);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
  }
  return 0;
}
