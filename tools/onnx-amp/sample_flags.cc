#include "tools/onnx-amp/sample_flags.h"

#include <cmath>
#include <exception>
#include <map>
#include <utility>

namespace onnx_amp {
namespace {

// Splits "NAME=VALUE" for the flag `flag`.
Expected<std::pair<std::string, std::string>> SplitAssignment(const std::string& text, const std::string& flag) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument(flag + " '" + text + "': expected NAME=VALUE");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Expected<double> ParseNumber(const std::string& text, const std::string& context) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value)) {
    return InvalidArgument(context + ": '" + text + "' is not a finite number");
  }
  return value;
}

// "NAME=A,B" -> (NAME, A, B).
Expected<std::pair<std::string, std::pair<double, double>>> ParsePair(const std::string& text, const std::string& flag) {
  ONNX_AMP_ASSIGN_OR_RETURN(auto assignment, SplitAssignment(text, flag));
  const size_t comma = assignment.second.find(',');
  if (comma == std::string::npos) return InvalidArgument(flag + " '" + text + "': expected NAME=A,B");
  const std::string context = flag + " " + text;
  ONNX_AMP_ASSIGN_OR_RETURN(double a, ParseNumber(assignment.second.substr(0, comma), context));
  ONNX_AMP_ASSIGN_OR_RETURN(double b, ParseNumber(assignment.second.substr(comma + 1), context));
  return std::make_pair(assignment.first, std::make_pair(a, b));
}

Expected<std::map<std::string, int64_t>> ParseDims(const std::vector<std::string>& dims) {
  std::map<std::string, int64_t> sizes;
  for (const std::string& text : dims) {
    ONNX_AMP_ASSIGN_OR_RETURN(auto assignment, SplitAssignment(text, "--dim"));
    ONNX_AMP_ASSIGN_OR_RETURN(double size, ParseNumber(assignment.second, "--dim " + text));
    if (size < 0 || size != std::floor(size)) {
      return InvalidArgument("--dim " + text + ": the size must be a non-negative integer");
    }
    sizes[assignment.first] = static_cast<int64_t>(size);
  }
  return sizes;
}

}  // namespace

std::vector<CLI::Option*> AddSampleFlags(CLI::App& command, SampleFlags& flags) {
  CLI::Option* inputs =
      command.add_option("--inputs", flags.inputs, "input samples: .npz files, one sample each, arrays named by input");
  CLI::Option* random = command.add_flag(
      "--random", flags.random,
      "generate the samples: floats uniform in [-1, 1), integers in [0, 10) unless --range/--int-range says otherwise");
  random->excludes(inputs);
  std::vector<CLI::Option*> added = {inputs, random};
  added.push_back(command.add_option("--samples", flags.samples, "how many samples --random generates (default 1)")
      ->needs(random)
      ->check(CLI::PositiveNumber));
  added.push_back(command.add_option("--seed", flags.seed, "seed for --random (default 0)")->needs(random));
  added.push_back(command.add_option("--dim", flags.dims, "NAME=N: size of a symbolic dim, for --random"));
  added.push_back(
      command.add_option("--range", flags.ranges, "NAME=LOW,HIGH: --random draws input NAME uniformly in [LOW, HIGH)")
          ->needs(random));
  added.push_back(command
                      .add_option("--int-range", flags.int_ranges,
                                  "NAME=LOW,HIGH: --random draws integers in [LOW, HIGH) for input NAME (e.g. mask=0,2)")
                      ->needs(random));
  added.push_back(
      command.add_option("--rtol", flags.rtol, "relative tolerance for every value, replacing the derived ones"));
  added.push_back(
      command.add_option("--atol", flags.atol, "absolute tolerance for every value, replacing the derived ones"));
  added.push_back(command.add_option("--tolerance", flags.tolerances, "OUTPUT=RTOL,ATOL: tolerance of one output"));
  return added;
}

Expected<std::vector<Feeds>> GatherSamples(const SampleFlags& flags, const std::vector<InputSpec>& inputs) {
  if (!flags.inputs.empty()) return ReadSamples(flags.inputs, inputs);
  if (!flags.random) return InvalidArgument("give input samples with --inputs FILE.npz ... or generate them with --random");
  RandomSampleOptions options;
  options.samples = flags.samples;
  options.seed = flags.seed;
  ONNX_AMP_ASSIGN_OR_RETURN(options.dim_sizes, ParseDims(flags.dims));
  for (const auto* list : {&flags.ranges, &flags.int_ranges}) {
    const bool integral = list == &flags.int_ranges;
    for (const std::string& text : *list) {
      ONNX_AMP_ASSIGN_OR_RETURN(auto parsed, ParsePair(text, integral ? "--int-range" : "--range"));
      options.ranges[parsed.first] = {parsed.second.first, parsed.second.second, integral};
    }
  }
  return RandomSamples(inputs, options);
}

Expected<ValidateOptions> ToleranceOptions(const SampleFlags& flags) {
  ValidateOptions options;
  if (flags.rtol || flags.atol) {
    const Tolerance tolerance{flags.rtol.value_or(0.0), flags.atol.value_or(0.0)};
    if (!(tolerance.rtol >= 0.0) || !(tolerance.atol >= 0.0)) {
      return InvalidArgument("--rtol/--atol: tolerances must be non-negative");
    }
    options.tolerance = tolerance;
  }
  for (const std::string& text : flags.tolerances) {
    ONNX_AMP_ASSIGN_OR_RETURN(auto parsed, ParsePair(text, "--tolerance"));
    if (parsed.second.first < 0.0 || parsed.second.second < 0.0) {
      return InvalidArgument("--tolerance " + text + ": tolerances must be non-negative");
    }
    options.per_output[parsed.first] = {parsed.second.first, parsed.second.second};
  }
  return options;
}

}  // namespace onnx_amp
