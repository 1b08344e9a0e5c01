// The ONNX backend conformance runner. Runs every test folder of the suites node,
// simple, pytorch-converted and pytorch-operator under DATA_DIR: loads model.onnx, feeds
// each test_data_set_N/input_K.pb to the K-th graph input that no initializer backs, and
// compares every output with output_K.pb (|a - e| <= atol + rtol * |e|, NaN matches NaN,
// integers and bools exactly). Each test runs in a child process, so a crash or a hang
// in one kernel is a failed test rather than a lost run.
//
// Usage: onnx_conformance DATA_DIR FLOOR_JSON [--filter SUBSTRING] [--jobs N] [--verbose]
// Exits 1 when a suite passes fewer tests than its floor in FLOOR_JSON.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/kernel_registry.h"
#include "runtime/executor/executor.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/model_io.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

constexpr double kRelativeTolerance = 1e-3;
constexpr double kAbsoluteTolerance = 1e-7;
constexpr unsigned kTestTimeoutSeconds = 30;
const char* const kSuites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

enum class Outcome { kPassed, kFailed, kUnsupported };

struct TestResult {
  Outcome outcome = Outcome::kFailed;
  std::string detail;
};

TestResult FromStatus(const Status& status) {
  return {status.code() == ErrorCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed, status.message()};
}

// Element `i` as a double, for float and integer comparisons alike.
double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return HalfBitsToFloat(static_cast<const uint16_t*>(t.raw_data())[i]);
    case DType::kBFloat16: return BFloat16BitsToFloat(static_cast<const uint16_t*>(t.raw_data())[i]);
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kInt16: return t.data<int16_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kUInt16: return t.data<uint16_t>()[i];
    case DType::kUInt32: return t.data<uint32_t>()[i];
    case DType::kUInt64: return static_cast<double>(t.data<uint64_t>()[i]);
    case DType::kBool: return t.data<bool>()[i] ? 1 : 0;
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128: return 0;
  }
  return 0;
}

// "" when `actual` matches `expected`, else the first mismatch.
std::string Compare(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return "dtype " + std::string(DTypeName(actual.dtype())) + ", expected " + std::string(DTypeName(expected.dtype()));
  }
  if (actual.shape() != expected.shape()) {
    return "shape " + ShapeToString(actual.shape()) + ", expected " + ShapeToString(expected.shape());
  }
  const bool is_float = IsFloatingPoint(expected.dtype());
  const bool is_wide_int = expected.dtype() == DType::kInt64 || expected.dtype() == DType::kUInt64;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    const double a = ValueAt(actual, i);
    const double e = ValueAt(expected, i);
    bool ok;
    if (is_wide_int) {
      // Compared as bits: doubles would round values beyond 2^53.
      ok = std::memcmp(static_cast<const char*>(actual.raw_data()) + 8 * i,
                       static_cast<const char*>(expected.raw_data()) + 8 * i, 8) == 0;
    } else if (!is_float) {
      ok = a == e;
    } else if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
    } else {
      ok = a == e || std::fabs(a - e) <= kAbsoluteTolerance + kRelativeTolerance * std::fabs(e);
    }
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof text, "index %lld: got %.9g, expected %.9g", static_cast<long long>(i), a, e);
      return text;
    }
  }
  return "";
}

std::vector<fs::path> SortedEntries(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) entries.push_back(entry.path());
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

// ONNX test data from before NumPy knew bfloat16 stores bfloat16 tensors as uint16 bit
// patterns; they are read back as the bfloat16 the model declares.
Tensor AsDeclared(Tensor tensor, DType declared) {
  if (declared != DType::kBFloat16 || tensor.dtype() != DType::kUInt16) return tensor;
  return Tensor(DType::kBFloat16, tensor.shape(), tensor.buffer());
}

TestResult RunTest(const fs::path& dir) {
  Expected<onnx::ModelProto> model = LoadModel(dir / "model.onnx");
  if (!model.ok()) return FromStatus(model.status());
  ExecutorOptions options;
  options.num_threads = 1;
  auto executor = Executor::Create(*model, options);
  if (!executor.ok()) return FromStatus(executor.status());

  std::vector<const InputSpec*> feed_specs;
  for (const InputSpec& spec : (*executor)->inputs()) {
    if (!spec.has_default) feed_specs.push_back(&spec);
  }
  const std::vector<fs::path> data_sets = SortedEntries(dir, "test_data_set_");
  if (data_sets.empty()) return {Outcome::kFailed, "no test_data_set_N folder"};
  for (const fs::path& data_set : data_sets) {
    const std::string set_name = data_set.filename().string();
    std::map<std::string, Tensor> feeds;
    for (size_t k = 0; fs::exists(data_set / ("input_" + std::to_string(k) + ".pb")); ++k) {
      if (k >= feed_specs.size()) return {Outcome::kFailed, set_name + ": more input files than graph inputs"};
      Expected<NamedTensor> input = ReadTensorProtoFile(data_set / ("input_" + std::to_string(k) + ".pb"));
      if (!input.ok()) return FromStatus(input.status());
      feeds[feed_specs[k]->name] = AsDeclared(std::move(input->tensor), feed_specs[k]->dtype);
    }
    Expected<RunResult> result = (*executor)->Run(feeds);
    if (!result.ok()) return FromStatus(result.status().WithContext(set_name));
    for (size_t k = 0; k < result->outputs.size(); ++k) {
      const fs::path expected_path = data_set / ("output_" + std::to_string(k) + ".pb");
      if (!fs::exists(expected_path)) continue;
      Expected<NamedTensor> expected = ReadTensorProtoFile(expected_path);
      if (!expected.ok()) return FromStatus(expected.status());
      const Tensor& actual = result->outputs[k].tensor;
      const std::string mismatch = Compare(actual, AsDeclared(std::move(expected->tensor), actual.dtype()));
      if (!mismatch.empty()) {
        return {Outcome::kFailed, set_name + ": output '" + result->outputs[k].name + "' " + mismatch};
      }
    }
  }
  return {Outcome::kPassed, ""};
}

// A test running in a child process; the child writes one outcome byte and the
// detail to its pipe and exits.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
};

// The detail is cut so the whole message fits in the pipe buffer: the child exits
// without waiting for the parent to read.
constexpr size_t kMaxDetail = 4000;

Expected<Child> StartTest(const fs::path& dir, size_t index) {
  int fds[2];
  if (pipe(fds) != 0) return IoError("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return IoError("fork failed");
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(kTestTimeoutSeconds);
    const TestResult result = RunTest(dir);
    std::string message(1, static_cast<char>('0' + static_cast<int>(result.outcome)));
    message += result.detail.substr(0, kMaxDetail);
    size_t written = 0;
    while (written < message.size()) {
      const ssize_t n = write(fds[1], message.data() + written, message.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  return Child{pid, fds[0], index};
}

TestResult FinishTest(const Child& child, int wait_status) {
  std::string message;
  char chunk[4096];
  ssize_t n;
  while ((n = read(child.fd, chunk, sizeof chunk)) > 0) message.append(chunk, static_cast<size_t>(n));
  close(child.fd);
  if (WIFSIGNALED(wait_status)) {
    const int signal_number = WTERMSIG(wait_status);
    if (signal_number == SIGALRM) return {Outcome::kFailed, "timed out after " + std::to_string(kTestTimeoutSeconds) + " s"};
    return {Outcome::kFailed, std::string("crashed: ") + strsignal(signal_number)};
  }
  if (message.empty()) return {Outcome::kFailed, "no result from the test process"};
  return {static_cast<Outcome>(message[0] - '0'), message.substr(1)};
}

// Runs every test, `jobs` child processes at a time; results in the order of `dirs`.
std::vector<TestResult> RunAll(const std::vector<fs::path>& dirs, int jobs) {
  std::vector<TestResult> results(dirs.size());
  std::vector<Child> running;
  size_t next = 0;
  while (next < dirs.size() || !running.empty()) {
    while (next < dirs.size() && static_cast<int>(running.size()) < jobs) {
      Expected<Child> child = StartTest(dirs[next], next);
      if (child.ok()) {
        running.push_back(*child);
      } else {
        results[next] = {Outcome::kFailed, child.status().message()};
      }
      ++next;
    }
    if (running.empty()) continue;
    int wait_status = 0;
    const pid_t pid = waitpid(-1, &wait_status, 0);
    if (pid < 0) break;
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].pid != pid) continue;
      results[running[i].index] = FinishTest(running[i], wait_status);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  return results;
}

struct SuiteCounts {
  int passed = 0;
  int failed = 0;
  int unsupported = 0;
};

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: onnx_conformance DATA_DIR FLOOR_JSON [--filter SUBSTRING] [--jobs N] [--verbose]\n");
    return 2;
  }
  const fs::path data_dir = argv[1];
  const fs::path floor_path = argv[2];
  std::string filter;
  bool verbose = false;
  int jobs = 2;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (arg == "--jobs" && i + 1 < argc) {
      jobs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--verbose") {
      verbose = true;
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  std::map<std::string, int> floors;
  {
    std::ifstream in(floor_path);
    const nlohmann::json floor_json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!floor_json.is_object()) {
      std::fprintf(stderr, "%s: not a JSON object of suite floors\n", floor_path.c_str());
      return 2;
    }
    for (const auto& [suite, value] : floor_json.items()) {
      if (value.is_number_integer()) floors[suite] = value.get<int>();
    }
  }

  std::vector<fs::path> dirs;
  std::vector<std::string> names;
  std::vector<std::string> suites;
  for (const char* suite : kSuites) {
    for (const fs::path& dir : SortedEntries(data_dir / suite, "")) {
      const std::string name = std::string(suite) + "/" + dir.filename().string();
      if (!fs::exists(dir / "model.onnx") || (!filter.empty() && name.find(filter) == std::string::npos)) continue;
      dirs.push_back(dir);
      names.push_back(name);
      suites.push_back(suite);
    }
  }
  // Built once here, so that each test process inherits the kernel table.
  CpuKernelRegistry();
  const std::vector<TestResult> results = RunAll(dirs, jobs);

  std::map<std::string, SuiteCounts> counts;
  std::vector<std::string> failures;
  for (size_t i = 0; i < results.size(); ++i) {
    SuiteCounts& c = counts[suites[i]];
    switch (results[i].outcome) {
      case Outcome::kPassed: ++c.passed; break;
      case Outcome::kFailed:
        ++c.failed;
        failures.push_back(names[i] + ": " + results[i].detail);
        break;
      case Outcome::kUnsupported:
        ++c.unsupported;
        if (verbose) std::printf("UNSUPPORTED %s: %s\n", names[i].c_str(), results[i].detail.c_str());
        break;
    }
  }

  for (const std::string& failure : failures) std::printf("FAILED %s\n", failure.c_str());
  SuiteCounts total;
  bool below_floor = false;
  for (const char* suite : kSuites) {
    const SuiteCounts& c = counts[suite];
    const int floor = floors.count(suite) ? floors[suite] : 0;
    std::printf("%-18s passed %4d  failed %4d  unsupported %4d  (floor %d)%s\n", suite, c.passed, c.failed,
                c.unsupported, floor, c.passed < floor ? "  BELOW FLOOR" : "");
    below_floor = below_floor || (filter.empty() && c.passed < floor);
    total.passed += c.passed;
    total.failed += c.failed;
    total.unsupported += c.unsupported;
  }
  std::printf("conformance: %d passed, %d failed, %d unsupported of %d tests\n", total.passed, total.failed,
              total.unsupported, total.passed + total.failed + total.unsupported);
  return below_floor ? 1 : 0;
}

}  // namespace
}  // namespace onnx_amp

int main(int argc, char** argv) { return onnx_amp::Main(argc, argv); }
