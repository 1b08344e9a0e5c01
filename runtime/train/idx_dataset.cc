#include "runtime/train/idx_dataset.h"

#include <zlib.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/limits.h"

namespace onnx_amp {
namespace {

constexpr uint32_t kUnsignedByteType = 0x08;

struct GzCloser {
  void operator()(gzFile file) const { gzclose(file); }
};
using GzHandle = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads the whole file; zlib reads plain files transparently, so .gz is optional.
Expected<std::vector<uint8_t>> ReadMaybeGzipped(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return NotFound(path.string() + ": no such file");
  GzHandle file(gzopen(path.c_str(), "rb"));
  if (!file) return IoError(path.string() + ": cannot open");
  std::vector<uint8_t> bytes;
  // Read through a fixed chunk, so a small file costs no large zero-filled buffer.
  std::vector<uint8_t> chunk(size_t{64} << 10);
  while (true) {
    const int got = gzread(file.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int code = 0;
      return IoError(path.string() + ": corrupt gzip data (" + gzerror(file.get(), &code) + ")");
    }
    if (got == 0) break;
    // A small .gz can inflate to any size: stop before memory runs out.
    ONNX_AMP_RETURN_IF_ERROR(CheckMemoryCap(bytes.size() + static_cast<size_t>(got), PhysicalMemoryBytes(),
                                            path.string() + ": the inflated data", "physical memory"));
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + got);
  }
  return bytes;
}

uint32_t ReadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // the whole file; data starts at data_offset
  size_t data_offset = 0;
};

// Parses the header (magic 0x0000 TT NN: type TT, NN dimensions, then NN big-endian sizes).
Expected<IdxArray> ReadIdx(const std::filesystem::path& path, size_t expected_rank) {
  IdxArray array;
  ONNX_AMP_ASSIGN_OR_RETURN(array.bytes, ReadMaybeGzipped(path));
  const std::string name = path.string();
  if (array.bytes.size() < 4) return InvalidArgument(name + ": too short for an IDX file");
  const uint8_t* header = array.bytes.data();
  if (header[0] != 0 || header[1] != 0) return InvalidArgument(name + ": not an IDX file (bad magic number)");
  if (header[2] != kUnsignedByteType) {
    return Unsupported(name + ": IDX element type 0x" + std::to_string(header[2]) + " is not unsigned byte");
  }
  const size_t rank = header[3];
  if (rank != expected_rank) {
    return InvalidArgument(name + ": expected " + std::to_string(expected_rank) + " dimensions, found " +
                           std::to_string(rank));
  }
  array.data_offset = 4 + 4 * rank;
  if (array.bytes.size() < array.data_offset) return InvalidArgument(name + ": truncated IDX header");
  for (size_t i = 0; i < rank; ++i) array.dims.push_back(ReadBigEndian32(header + 4 + 4 * i));
  // Three 32-bit dims can multiply past 64 bits; the checked count cannot.
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t elements, CheckedElementCount(array.dims, name));
  const size_t count = static_cast<size_t>(elements);
  const size_t available = array.bytes.size() - array.data_offset;
  if (available != count) {
    return InvalidArgument(name + ": header promises " + std::to_string(count) + " bytes of data, file has " +
                           std::to_string(available) + (available < count ? " (truncated)" : ""));
  }
  return array;
}

std::filesystem::path FindWithOptionalGz(const std::filesystem::path& folder, const std::string& stem) {
  const std::filesystem::path plain = folder / stem;
  if (std::filesystem::exists(plain)) return plain;
  return folder / (stem + ".gz");
}

}  // namespace

Expected<LabeledData> LoadIdxPair(const std::filesystem::path& images, const std::filesystem::path& labels) {
  ONNX_AMP_ASSIGN_OR_RETURN(IdxArray image_array, ReadIdx(images, 3));
  ONNX_AMP_ASSIGN_OR_RETURN(IdxArray label_array, ReadIdx(labels, 1));
  if (image_array.dims[0] != label_array.dims[0]) {
    return InvalidArgument(images.string() + " holds " + std::to_string(image_array.dims[0]) + " images but " +
                           labels.string() + " holds " + std::to_string(label_array.dims[0]) + " labels");
  }
  ONNX_AMP_RETURN_IF_ERROR(CheckMemoryCap(image_array.bytes.size() * sizeof(float), PhysicalMemoryBytes(),
                                          images.string() + ": the float32 images", "physical memory"));
  LabeledData data;
  data.features = Tensor::Empty(DType::kFloat32, image_array.dims);
  const uint8_t* pixels = image_array.bytes.data() + image_array.data_offset;
  float* features = data.features.data<float>();
  for (int64_t i = 0; i < data.features.num_elements(); ++i) features[i] = static_cast<float>(pixels[i]) / 255.0f;

  data.labels = Tensor::Empty(DType::kInt64, {label_array.dims[0]});
  const uint8_t* raw_labels = label_array.bytes.data() + label_array.data_offset;
  int64_t* out_labels = data.labels.data<int64_t>();
  for (int64_t i = 0; i < label_array.dims[0]; ++i) out_labels[i] = raw_labels[i];
  return data;
}

Expected<TrainEvalData> LoadIdxFolder(const std::filesystem::path& folder) {
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) return NotFound(folder.string() + ": no such folder");
  TrainEvalData data;
  ONNX_AMP_ASSIGN_OR_RETURN(data.train, LoadIdxPair(FindWithOptionalGz(folder, "train-images-idx3-ubyte"),
                                                    FindWithOptionalGz(folder, "train-labels-idx1-ubyte")));
  const std::filesystem::path eval_images = FindWithOptionalGz(folder, "t10k-images-idx3-ubyte");
  const std::filesystem::path eval_labels = FindWithOptionalGz(folder, "t10k-labels-idx1-ubyte");
  if (std::filesystem::exists(eval_images) || std::filesystem::exists(eval_labels)) {
    ONNX_AMP_ASSIGN_OR_RETURN(data.eval, LoadIdxPair(eval_images, eval_labels));
  }
  return data;
}

}  // namespace onnx_amp
