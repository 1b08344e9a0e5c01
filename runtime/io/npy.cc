#include "runtime/io/npy.h"

#include <cstring>
#include <optional>
#include <string>

#include "runtime/core/limits.h"
#include "runtime/io/bool_bytes.h"
#include "runtime/io/file_bytes.h"

namespace onnx_amp {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The header is a Python dict literal; this finds the text after `'key':`.
std::optional<std::string_view> FindKey(std::string_view header, std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  const size_t at = header.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  size_t pos = at + quoted.size();
  while (pos < header.size() && header[pos] == ' ') ++pos;
  if (pos >= header.size() || header[pos] != ':') return std::nullopt;
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  return header.substr(pos);
}

std::optional<DType> DTypeFromDescr(std::string_view descr) {
  if (descr.size() != 3) return std::nullopt;
  const char order = descr[0];
  const std::string_view code = descr.substr(1);
  const bool single_byte = code[1] == '1';
  // '=' is native order, little-endian on every host this builds for; '|' marks
  // single-byte types, where order does not apply.
  if (order != '<' && order != '=' && !(order == '|' && single_byte)) return std::nullopt;
  if (code == "f2") return DType::kFloat16;
  if (code == "f4") return DType::kFloat32;
  if (code == "f8") return DType::kFloat64;
  if (code == "i1") return DType::kInt8;
  if (code == "i2") return DType::kInt16;
  if (code == "i4") return DType::kInt32;
  if (code == "i8") return DType::kInt64;
  if (code == "u1") return DType::kUInt8;
  if (code == "u2") return DType::kUInt16;
  if (code == "u4") return DType::kUInt32;
  if (code == "u8") return DType::kUInt64;
  if (code == "b1") return DType::kBool;
  return std::nullopt;
}

std::optional<std::string_view> DescrFor(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kUInt8: return "|u1";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kBool: return "|b1";
    case DType::kBFloat16:
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128: return std::nullopt;
  }
  return std::nullopt;
}

Expected<Shape> ParseShapeTuple(std::string_view text, const std::string& label) {
  if (text.empty() || text[0] != '(') return InvalidArgument(label + ": malformed shape in .npy header");
  const size_t close = text.find(')');
  if (close == std::string_view::npos) return InvalidArgument(label + ": malformed shape in .npy header");
  Shape shape;
  size_t pos = 1;
  while (pos < close) {
    while (pos < close && (text[pos] == ' ' || text[pos] == ',')) ++pos;
    if (pos >= close) break;
    int64_t dim = 0;
    size_t digits = 0;
    while (pos < close && text[pos] >= '0' && text[pos] <= '9') {
      dim = dim * 10 + (text[pos] - '0');
      if (dim > kMaxTensorElements) return InvalidArgument(label + ": dimension too large in .npy header");
      ++pos;
      ++digits;
    }
    // NumPy may write Python 2 longs as "3L".
    if (pos < close && text[pos] == 'L') ++pos;
    if (digits == 0 || (pos < close && text[pos] != ',' && text[pos] != ' ')) {
      return InvalidArgument(label + ": malformed shape in .npy header");
    }
    shape.push_back(dim);
  }
  ONNX_AMP_RETURN_IF_ERROR(CheckedElementCount(shape, label + ": .npy shape").status());
  return shape;
}

}  // namespace

Expected<Tensor> ParseNpy(std::string_view bytes, const std::string& label) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic) {
    return InvalidArgument(label + ": not a .npy array (bad magic)");
  }
  const unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t data_offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    data_offset = 10 + header_len;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidArgument(label + ": truncated .npy header");
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    data_offset = 12 + header_len;
  } else {
    return Unsupported(label + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > kMaxNpyHeaderBytes) {
    return InvalidArgument(label + ": .npy header of " + std::to_string(header_len) + " bytes exceeds the limit of " +
                           std::to_string(kMaxNpyHeaderBytes));
  }
  if (data_offset > bytes.size()) return InvalidArgument(label + ": truncated .npy header");
  const std::string_view header = bytes.substr(data_offset - header_len, header_len);

  const auto descr_text = FindKey(header, "descr");
  const auto fortran_text = FindKey(header, "fortran_order");
  const auto shape_text = FindKey(header, "shape");
  if (!descr_text || !fortran_text || !shape_text) {
    return InvalidArgument(label + ": .npy header lacks descr, fortran_order or shape");
  }
  if (descr_text->empty() || ((*descr_text)[0] != '\'' && (*descr_text)[0] != '"')) {
    return Unsupported(label + ": structured .npy dtypes are not supported");
  }
  const size_t descr_end = descr_text->find((*descr_text)[0], 1);
  if (descr_end == std::string_view::npos) return InvalidArgument(label + ": malformed descr in .npy header");
  const std::string descr(descr_text->substr(1, descr_end - 1));
  const std::optional<DType> dtype = DTypeFromDescr(descr);
  if (!dtype) {
    if (descr == "<V2" || descr == "|V2") {
      return Unsupported(label + ": dtype '" + descr +
                         "' (an opaque 2-byte type, as ml_dtypes saves bfloat16) has no portable meaning; "
                         "save bfloat16 data as float32 or give a .pb TensorProto file");
    }
    return Unsupported(label + ": .npy dtype '" + descr + "' is not supported");
  }
  if (fortran_text->substr(0, 4) == "True") return Unsupported(label + ": Fortran-order arrays are not supported");
  if (fortran_text->substr(0, 5) != "False") return InvalidArgument(label + ": malformed fortran_order in .npy header");
  ONNX_AMP_ASSIGN_OR_RETURN(Shape shape, ParseShapeTuple(*shape_text, label));

  const size_t expected = static_cast<size_t>(NumElements(shape)) * DTypeSize(*dtype);
  const size_t available = bytes.size() - data_offset;
  if (available != expected) {
    return InvalidArgument(label + ": .npy data holds " + std::to_string(available) + " bytes, shape " +
                           ShapeToString(shape) + " of " + descr + " needs " + std::to_string(expected));
  }
  Tensor tensor = Tensor::Empty(*dtype, std::move(shape));
  if (expected > 0) std::memcpy(tensor.raw_data(), bytes.data() + data_offset, expected);
  if (*dtype == DType::kBool) ONNX_AMP_RETURN_IF_ERROR(CheckBoolBytes(tensor.raw_data(), expected, label));
  return tensor;
}

Expected<std::string> SerializeNpy(const Tensor& tensor, const std::string& label) {
  const std::optional<std::string_view> descr = DescrFor(tensor.dtype());
  if (!descr) {
    return Unsupported(label + ": " + std::string(DTypeName(tensor.dtype())) + " has no standard NumPy dtype");
  }
  if (tensor.device() != DeviceKind::kCpu) return Unsupported(label + ": not in CPU memory");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    shape += std::to_string(tensor.shape()[i]);
    shape += tensor.shape().size() == 1 ? "," : (i + 1 < tensor.shape().size() ? ", " : "");
  }
  shape += ")";
  std::string header = "{'descr': '" + std::string(*descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pads with spaces and a newline so the data starts on a 64-byte boundary, as NumPy does.
  const auto padded = [&](size_t prefix) { return (prefix + header.size() + 1 + 63) / 64 * 64; };
  const bool version1 = padded(10) - 10 <= 65535;
  const size_t prefix = version1 ? 10 : 12;
  const size_t total = padded(prefix);
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string out(kMagic);
  out += static_cast<char>(version1 ? 1 : 2);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>((len >> 8) & 0xFF);
  if (!version1) {
    out += static_cast<char>((len >> 16) & 0xFF);
    out += static_cast<char>((len >> 24) & 0xFF);
  }
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  return out;
}

Expected<Tensor> ReadNpyFile(const std::filesystem::path& path) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::string contents, ReadWholeFile(path));
  return ParseNpy(contents, path.string());
}

Status WriteNpyFile(const std::filesystem::path& path, const Tensor& tensor) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::string contents, SerializeNpy(tensor, path.string()));
  return WriteWholeFile(path, contents);
}

}  // namespace onnx_amp
