// Streaming conversion of external-data models: large initializers are read, converted
// and written chunk by chunk (converter-anchors (d) pain 8). The streamed output must
// equal the in-memory conversion, and a model over protobuf's 2 GiB limit converts with
// a peak memory far below its size.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "converter/convert_model.h"
#include "converter/passes/convert_initializers.h"
#include "converter/paint_seeds.h"
#include "converter/passes/low_tensor.h"
#include "runtime/core/convert.h"
#include "runtime/onnx/model_io.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

class TempFolder {
 public:
  TempFolder() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("onnx_amp_streaming_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

void AddValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
                  std::vector<int64_t> dims) {
  onnx::ValueInfoProto* info = list->Add();
  info->set_name(name);
  auto* tensor_type = info->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims) tensor_type->mutable_shape()->add_dim()->set_dim_value(dim);
}

void AddNode(onnx::GraphProto* graph, const std::string& op, const std::string& name,
             std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  node->add_output(output);
}

onnx::ModelProto EmptyModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  model.mutable_graph()->set_name("streaming");
  return model;
}

uint16_t Bits(const std::string& bytes, size_t i) {
  uint16_t value = 0;
  std::memcpy(&value, bytes.data() + i * 2, 2);
  return value;
}

// Values that exercise every branch: beyond float16's range (clamped), below half its
// smallest subnormal (flushed), inf/NaN (kept), ties, and ordinary weights.
std::vector<float> EdgeValues(size_t count) {
  std::vector<float> values = {70000.0f, -1e9f, 65519.0f, 65520.0f, -65504.0f, 1e-9f, -2.9e-8f, 3e-8f,
                               std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                               0.0f, -0.0f, 1.0f + 1.0f / 4096.0f, 5.960464477539063e-8f};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  while (values.size() < count) values.push_back(normal(rng));
  values.resize(count);
  return values;
}

// Paint reads a streamed tensor through the summary of its chunks and an in-memory one
// through the summary of its data: both must agree, whatever the chunking.
TEST(StreamingTest, ChunkedValueSummaryMatchesWholeTensor) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> values;
    float largest_finite;
    float smallest_nonzero;  // NaN: the first non-zero value is NaN
  };
  const std::vector<Case> cases = {
      {{0.0f, -3.0f, 1e-7f, 70000.0f, -0.0f}, 70000.0f, 1e-7f},
      {{0.0f, 0.0f}, 0.0f, 0.0f},
      {{inf, -2.0f, 5.0f}, 5.0f, 2.0f},
      {{0.0f, nan, 1e-9f, 4.0f}, 4.0f, nan},
      {{1.0f, nan, 1e-9f}, 1.0f, 1e-9f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.values));
    onnx::TensorProto tensor;
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.set_raw_data(c.values.data(), c.values.size() * sizeof(float));
    const ValueSummary whole = SummarizeFloatTensor(tensor);
    EXPECT_EQ(whole.largest_finite, c.largest_finite);
    if (std::isnan(c.smallest_nonzero)) {
      EXPECT_TRUE(std::isnan(whole.smallest_nonzero));
    } else {
      EXPECT_EQ(whole.smallest_nonzero, c.smallest_nonzero);
    }
    for (size_t chunk = 1; chunk <= c.values.size(); ++chunk) {
      MagnitudeSummary chunked;
      for (size_t i = 0; i < c.values.size(); i += chunk) {
        chunked.AddBytes(reinterpret_cast<const char*>(c.values.data() + i),
                         std::min(chunk, c.values.size() - i) * sizeof(float));
      }
      const ValueSummary streamed = chunked.Summary();
      EXPECT_EQ(std::memcmp(&streamed, &whole, sizeof(ValueSummary)), 0) << "chunk " << chunk;
    }
  }
}

TEST(StreamingTest, ChunkConversionMatchesTensorConversion) {
  const std::vector<float> values = EdgeValues(1000);
  for (const DType low : {DType::kFloat16, DType::kBFloat16}) {
    onnx::TensorProto tensor;
    tensor.set_name("w");
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(static_cast<int64_t>(values.size()));
    tensor.set_raw_data(values.data(), values.size() * sizeof(float));
    Expected<ClampedTensor> expected = ConvertTensorToLow(tensor, low);
    ASSERT_TRUE(expected.ok()) << expected.status().message();

    ClampedTensor record;
    std::vector<uint16_t> out(values.size());
    for (size_t at = 0; at < values.size(); at += 7) {  // chunks that split nothing special
      ConvertChunkToLow(values.data() + at, out.data() + at, std::min<size_t>(7, values.size() - at), low, record);
    }
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(out[i], Bits(tensor.raw_data(), i)) << DTypeName(low) << " value " << values[i];
    }
    EXPECT_EQ(record.clamped, expected->clamped) << DTypeName(low);
    EXPECT_EQ(record.worst, expected->worst) << DTypeName(low);
    EXPECT_EQ(record.flushed_to_zero, expected->flushed_to_zero) << DTypeName(low);
  }
  ClampedTensor half_record;
  std::vector<uint16_t> out(values.size());
  ConvertChunkToLow(values.data(), out.data(), values.size(), DType::kFloat16, half_record);
  EXPECT_EQ(half_record.clamped, 4);  // 70000, -1e9, 65519, 65520 (finite and beyond 65504)
  EXPECT_EQ(half_record.worst, -1e9f);
  EXPECT_EQ(half_record.flushed_to_zero, 2);  // 1e-9, -2.9e-8 are at most 2^-25
}

// W holds one value beyond float16's range, its first: its reader "mm" stays float32
// (init_max), which Paint must see although W stays in its file. U is read by "mm3" (low) and "keep"
// (pinned float32), so it is duplicated; V feeds "mm2" -> Add(b), converted in place.
// W, U and V are large (256 KiB), b small. U and V hold values float16 flushes to zero.
onnx::ModelProto SharedWeightModel() {
  onnx::ModelProto model = EmptyModel();
  onnx::GraphProto* graph = model.mutable_graph();
  constexpr int64_t kIn = 64;
  constexpr int64_t kOut = 1024;
  AddValueInfo(graph->mutable_input(), "x", {1, kIn});
  const std::vector<float> edge = EdgeValues(kIn * kOut);
  auto add_weight = [&](const std::string& name, std::vector<int64_t> dims, float scale, float first) {
    onnx::TensorProto* tensor = graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    size_t count = 1;
    for (int64_t dim : dims) {
      tensor->add_dims(dim);
      count *= static_cast<size_t>(dim);
    }
    std::vector<float> values(edge.begin(), edge.begin() + count);
    for (float& v : values) {
      v *= scale;
      if (!(std::fabs(v) <= 65504.0f)) v = 1.0f;
    }
    values[0] = first;
    tensor->set_raw_data(values.data(), values.size() * sizeof(float));
  };
  add_weight("W", {kIn, kOut}, 1.0f, 70000.0f);
  add_weight("U", {kIn, kOut}, 1.0f, 0.5f);
  add_weight("V", {kIn, kOut}, 0.5f, 0.5f);
  add_weight("b", {kOut}, 0.25f, 0.5f);
  AddNode(graph, "MatMul", "mm", {"x", "W"}, "y");
  AddNode(graph, "MatMul", "mm3", {"x", "U"}, "t");
  AddNode(graph, "MatMul", "keep", {"x", "U"}, "z");
  AddNode(graph, "MatMul", "mm2", {"x", "V"}, "v");
  AddNode(graph, "Add", "add", {"v", "b"}, "u");
  for (const char* output : {"y", "t", "z", "u"}) AddValueInfo(graph->mutable_output(), output, {1, kOut});
  return model;
}

ConvertOptions SharedWeightOptions() {
  ConvertOptions options;
  options.policy.kind = PolicyKind::kMixedFloat16;
  options.policy.fp32_nodes = "^keep$";
  EXPECT_TRUE(options.policy.Compile().ok());
  return options;
}

const onnx::TensorProto* Initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const onnx::TensorProto& tensor : model.graph().initializer()) {
    if (tensor.name() == name) return &tensor;
  }
  return nullptr;
}

TEST(StreamingTest, StreamedConversionEqualsInMemoryConversion) {
  TempFolder temp;
  fs::create_directories(temp / "in");
  fs::create_directories(temp / "out");
  SaveOptions external;
  external.mode = ExternalData::kAlways;
  external.durable = false;
  ASSERT_TRUE(SaveModel(SharedWeightModel(), temp / "in" / "model.onnx", external).ok());

  Expected<onnx::ModelProto> whole = LoadModel(temp / "in" / "model.onnx");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  Expected<ConvertResult> in_memory = ConvertModel(*whole, SharedWeightOptions());
  ASSERT_TRUE(in_memory.ok()) << in_memory.status().message();

  LoadOptions keep;
  keep.keep_external_from_bytes = 64 * 1024;  // W and V (256 KiB) stay in the file, b is read
  Expected<onnx::ModelProto> skeleton = LoadModel(temp / "in" / "model.onnx", keep);
  ASSERT_TRUE(skeleton.ok()) << skeleton.status().message();
  EXPECT_EQ(Initializer(*skeleton, "W")->data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(Initializer(*skeleton, "b")->raw_data().size(), 1024 * sizeof(float));
  ConvertOptions options = SharedWeightOptions();
  options.external_data_folder = temp / "in";
  Expected<ConvertResult> streamed = ConvertModel(std::move(*skeleton), options);
  ASSERT_TRUE(streamed.ok()) << streamed.status().message();
  for (const onnx::TensorProto& tensor : streamed->model.graph().initializer()) {
    if (tensor.name() != "b") {
      EXPECT_TRUE(tensor.raw_data().empty()) << tensor.name() << " was read into memory";
    }
  }
  ASSERT_TRUE(SaveConvertedModel(*streamed, temp / "out" / "model.onnx").ok());
  EXPECT_TRUE(fs::exists(temp / "out" / "model.onnx.data"));

  Expected<onnx::ModelProto> written = LoadModel(temp / "out" / "model.onnx");
  ASSERT_TRUE(written.ok()) << written.status().message();
  ASSERT_EQ(written->graph().initializer_size(), in_memory->model.graph().initializer_size());
  for (const onnx::TensorProto& expected : in_memory->model.graph().initializer()) {
    const onnx::TensorProto* actual = Initializer(*written, expected.name());
    ASSERT_NE(actual, nullptr) << expected.name();
    EXPECT_EQ(actual->data_type(), expected.data_type()) << expected.name();
    EXPECT_TRUE(actual->raw_data() == expected.raw_data()) << expected.name() << ": bytes differ";
  }
  // Both paths paint, convert and report alike.
  EXPECT_EQ(Initializer(*written, "W")->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(Initializer(*written, "U")->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(Initializer(*written, "U_amp_float16")->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(Initializer(*written, "V")->data_type(), onnx::TensorProto::FLOAT16);
  ASSERT_EQ(streamed->report.clamped.size(), in_memory->report.clamped.size());
  ASSERT_FALSE(streamed->report.clamped.empty());
  for (size_t i = 0; i < in_memory->report.clamped.size(); ++i) {
    const ClampedTensor& expected = in_memory->report.clamped[i];
    bool found = false;
    for (const ClampedTensor& actual : streamed->report.clamped) {
      if (actual.name != expected.name) continue;
      found = true;
      EXPECT_EQ(actual.clamped, expected.clamped) << expected.name;
      EXPECT_EQ(actual.worst, expected.worst) << expected.name;
      EXPECT_EQ(actual.flushed_to_zero, expected.flushed_to_zero) << expected.name;
    }
    EXPECT_TRUE(found) << expected.name << " missing from the streamed report";
  }
  EXPECT_EQ(streamed->report.initializers_converted, in_memory->report.initializers_converted);
  EXPECT_EQ(streamed->report.initializers_duplicated, in_memory->report.initializers_duplicated);
  EXPECT_EQ(streamed->report.casts_inserted, in_memory->report.casts_inserted);
}

// ---- Pain 8: a model over 2 GiB of external float32 weights ----

constexpr int64_t kRows = 16384;
constexpr int64_t kCols = 4096;
constexpr int kWeights = 10;  // 10 x 256 MiB = 2.5 GiB
constexpr size_t kWeightBytes = size_t{kRows} * kCols * sizeof(float);
constexpr size_t kChunkFloats = size_t{1} << 20;  // compared 4 MiB at a time

// Deterministic weights in [-2, 2) by element index; element 0 of w0 is beyond
// float16's range.
float WeightValue(int weight, size_t index) {
  if (weight == 0 && index == 0) return 1e6f;
  const uint32_t h = static_cast<uint32_t>(index * 2654435761u) ^ static_cast<uint32_t>(weight * 40503u);
  return static_cast<float>(static_cast<int32_t>(h >> 8) - (1 << 23)) / static_cast<float>(1 << 22);
}

// The data file is sparse so that the test writes little to disk: every MiB of it
// starts with 16 KiB and ends with 4 KiB of weights (so every streamed chunk and chunk
// border carries data that depends on its place), the rest reads as zeros. The
// converter still reads, converts and writes every byte.
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kHeadBytes = 16 * 1024;
constexpr size_t kTailBytes = 4 * 1024;

void WriteWindow(int fd, int weight, size_t tensor_offset, size_t begin, size_t size) {
  std::vector<float> values(size / sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) values[i] = WeightValue(weight, begin / sizeof(float) + i);
  const ssize_t written = ::pwrite(fd, values.data(), size, static_cast<off_t>(tensor_offset + begin));
  ASSERT_EQ(written, static_cast<ssize_t>(size));
}

// Writes the data file and a model that reads it: y_k = MatMul(x, w_k), output =
// Sum(y_0..y_9).
void WriteLargeModel(const fs::path& folder) {
  onnx::ModelProto model = EmptyModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddValueInfo(graph->mutable_input(), "x", {1, kRows});
  const fs::path data_path = folder / "big.onnx.data";
  const int fd = ::open(data_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kWeights * kWeightBytes)), 0);
  for (int k = 0; k < kWeights; ++k) {
    const std::string name = "w" + std::to_string(k);
    onnx::TensorProto* tensor = graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(kRows);
    tensor->add_dims(kCols);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    const std::pair<const char*, std::string> entries[] = {
        {"location", "big.onnx.data"},
        {"offset", std::to_string(k * kWeightBytes)},
        {"length", std::to_string(kWeightBytes)}};
    for (const auto& [key, value] : entries) {
      auto* entry = tensor->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    for (size_t mib = 0; mib < kWeightBytes; mib += kMiB) {
      WriteWindow(fd, k, k * kWeightBytes, mib, kHeadBytes);
      WriteWindow(fd, k, k * kWeightBytes, mib + kMiB - kTailBytes, kTailBytes);
    }
    AddNode(graph, "MatMul", "mm" + std::to_string(k), {"x", name}, "y" + std::to_string(k));
  }
  ASSERT_EQ(::close(fd), 0);
  onnx::NodeProto* sum = graph->add_node();
  sum->set_op_type("Sum");
  sum->set_name("sum");
  for (int k = 0; k < kWeights; ++k) sum->add_input("y" + std::to_string(k));
  sum->add_output("output");
  AddValueInfo(graph->mutable_output(), "output", {1, kCols});
  // SaveModel refuses models referring to external files; the graph is tiny, write it as is.
  std::ofstream out(folder / "big.onnx", std::ios::binary);
  ASSERT_TRUE(model.SerializeToOstream(&out));
}

struct ChildRun {
  int exit_code = -1;
  int64_t peak_rss_bytes = 0;
  std::string output;
};

// Runs argv as a child process; its peak RSS comes from its own rusage (wait4).
ChildRun RunChild(const std::vector<std::string>& argv, const fs::path& log) {
  ChildRun run;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid && WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
    run.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
  }
  std::ifstream in(log);
  run.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return run;
}

// Reads `size` bytes at `offset` of `file`.
std::vector<char> ReadAt(std::ifstream& file, uint64_t offset, size_t size) {
  std::vector<char> bytes(size);
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(bytes.data(), static_cast<std::streamsize>(size));
  return bytes;
}

uint64_t EntryNumber(const onnx::TensorProto& tensor, const std::string& key) {
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == key) return std::stoull(entry.value());
  }
  return std::numeric_limits<uint64_t>::max();
}

}  // namespace

TEST(ConverterPains, P08_LargeExternalDataModelConvertsInBoundedMemory) {
  TempFolder temp;
  fs::create_directories(temp / "in");
  fs::create_directories(temp / "out");
  ASSERT_NO_FATAL_FAILURE(WriteLargeModel(temp / "in"));
  const uint64_t model_bytes = fs::file_size(temp / "in" / "big.onnx") + fs::file_size(temp / "in" / "big.onnx.data");
  ASSERT_GT(model_bytes, uint64_t{2} << 30);

  const ChildRun run = RunChild({ONNX_AMP_CLI, "convert", (temp / "in" / "big.onnx").string(), "-o",
                                 (temp / "out" / "big.onnx").string(), "--policy", "float16", "--no-sync", "--report",
                                 (temp / "out" / "report.json").string()},
                                temp / "log.txt");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // One copy of the model would be 2.5 GiB; streaming holds chunks, not tensors.
  EXPECT_LT(run.peak_rss_bytes, static_cast<int64_t>(model_bytes / 8))
      << "peak RSS " << run.peak_rss_bytes / (1 << 20) << " MiB for a " << model_bytes / (1 << 20) << " MiB model";
  std::printf("peak RSS of onnx-amp convert: %lld MiB for a %llu MiB model\n",
              static_cast<long long>(run.peak_rss_bytes >> 20), static_cast<unsigned long long>(model_bytes >> 20));

  // The output is external data, and each tensor equals the bulk conversion of the input.
  LoadOptions references;
  references.load_external_data = false;
  Expected<onnx::ModelProto> output = LoadModel(temp / "out" / "big.onnx", references);
  ASSERT_TRUE(output.ok()) << output.status().message();
  EXPECT_LT(fs::file_size(temp / "out" / "big.onnx"), 64u * 1024);
  std::ifstream input_data(temp / "in" / "big.onnx.data", std::ios::binary);
  std::ifstream output_data(temp / "out" / "big.onnx.data", std::ios::binary);
  ASSERT_EQ(output->graph().initializer_size(), kWeights);
  std::vector<uint16_t> expected(kChunkFloats);
  for (int k = 0; k < kWeights; ++k) {
    const onnx::TensorProto& tensor = output->graph().initializer(k);
    ASSERT_EQ(tensor.name(), "w" + std::to_string(k));
    ASSERT_EQ(tensor.data_type(), onnx::TensorProto::FLOAT16);
    ASSERT_EQ(tensor.data_location(), onnx::TensorProto::EXTERNAL);
    ASSERT_EQ(EntryNumber(tensor, "length"), kWeightBytes / 2);
    const uint64_t offset = EntryNumber(tensor, "offset");
    for (size_t first = 0; first < kWeightBytes / sizeof(float); first += kChunkFloats) {
      const std::vector<char> in = ReadAt(input_data, k * kWeightBytes + first * 4, kChunkFloats * 4);
      const std::vector<char> out = ReadAt(output_data, offset + first * 2, kChunkFloats * 2);
      const float* in_values = reinterpret_cast<const float*>(in.data());
      ASSERT_EQ(in_values[1], WeightValue(k, first + 1)) << "the input holds the weights written";
      ConvertFloatToHalf(in_values, expected.data(), kChunkFloats);
      if (k == 0 && first == 0) {
        ASSERT_EQ(expected[0], 0x7C00) << "1e6 is beyond float16's range";
        expected[0] = 0x7BFF;  // clamped to 65504
      }
      ASSERT_EQ(std::memcmp(out.data(), expected.data(), out.size()), 0) << "w" << k << " differs near element " << first;
    }
  }
  std::ifstream report_file(temp / "out" / "report.json");
  const nlohmann::json report = nlohmann::json::parse(report_file);
  ASSERT_EQ(report["clamped"].size(), 1u) << report["clamped"].dump();
  EXPECT_EQ(report["clamped"][0]["name"], "w0");
  EXPECT_EQ(report["clamped"][0]["clamped"], 1);
  EXPECT_EQ(report["initializers_converted"], kWeights);
  EXPECT_EQ(report["casts_inserted"], 2);  // x to float16, the output back to float
}

}  // namespace onnx_amp
