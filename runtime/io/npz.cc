#include "runtime/io/npz.h"

#include <zlib.h>

#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "runtime/core/limits.h"
#include "runtime/io/file_bytes.h"
#include "runtime/io/npy.h"

namespace onnx_amp {
namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndOfCentralSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflated = 8;
constexpr std::string_view kNpySuffix = ".npy";

// Bounds-checked little-endian reads over the archive bytes.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool Has(size_t offset, size_t length) const { return offset <= bytes_.size() && length <= bytes_.size() - offset; }
  uint64_t Le(size_t offset, int width) const {
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(bytes_[offset + i]);
    return value;
  }
  uint16_t U16(size_t offset) const { return static_cast<uint16_t>(Le(offset, 2)); }
  uint32_t U32(size_t offset) const { return static_cast<uint32_t>(Le(offset, 4)); }
  uint64_t U64(size_t offset) const { return Le(offset, 8); }
  std::string_view Slice(size_t offset, size_t length) const { return bytes_.substr(offset, length); }
  size_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

struct Entry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t local_offset = 0;
};

struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
};

Expected<Directory> FindDirectory(const Reader& in, const std::string& label) {
  const Status bad = InvalidArgument(label + ": not a zip archive (no end-of-central-directory record)");
  if (in.size() < 22) return bad;
  // The end record sits in the last 22 + 65535 (maximum comment) bytes.
  const size_t lowest = in.size() > 22 + 65535 ? in.size() - 22 - 65535 : 0;
  for (size_t at = in.size() - 22 + 1; at-- > lowest;) {
    if (in.U32(at) != kEndOfCentralSignature) continue;
    Directory dir{in.U16(at + 10), in.U32(at + 16)};
    if (dir.entries != 0xFFFF && dir.offset != 0xFFFFFFFF) return dir;
    // zip64: a locator right before the end record points at the zip64 end record.
    if (at < 20 || in.U32(at - 20) != kZip64LocatorSignature) return bad;
    const uint64_t end64 = in.U64(at - 20 + 8);
    if (!in.Has(end64, 56) || in.U32(end64) != kZip64EndSignature) return bad;
    return Directory{in.U64(end64 + 32), in.U64(end64 + 48)};
  }
  return bad;
}

// Replaces 0xFFFFFFFF sizes and offsets with their values from the zip64 extra field.
Status ApplyZip64Extra(std::string_view extra, Entry& entry, const std::string& where) {
  Reader in(extra);
  size_t pos = 0;
  while (in.Has(pos, 4)) {
    const uint16_t id = in.U16(pos);
    const uint16_t length = in.U16(pos + 2);
    if (!in.Has(pos + 4, length)) break;
    if (id == kZip64ExtraId) {
      size_t field = pos + 4;
      for (uint64_t* value : {&entry.size, &entry.compressed_size, &entry.local_offset}) {
        if (*value != 0xFFFFFFFF) continue;
        if (field + 8 > pos + 4 + length) return InvalidArgument(where + ": truncated zip64 field");
        *value = in.U64(field);
        field += 8;
      }
      return Status::Ok();
    }
    pos += 4 + length;
  }
  if (entry.size == 0xFFFFFFFF || entry.compressed_size == 0xFFFFFFFF || entry.local_offset == 0xFFFFFFFF) {
    return InvalidArgument(where + ": zip64 sizes without a zip64 field");
  }
  return Status::Ok();
}

Expected<std::string> Inflate(std::string_view compressed, uint64_t size, const std::string& where) {
  // Deflate expands at most about 1032:1; a larger claim is a corrupt or hostile file.
  if (size > compressed.size() * uint64_t{1032} + 1024) return InvalidArgument(where + ": implausible entry size");
  ONNX_AMP_RETURN_IF_ERROR(
      CheckMemoryCap(size, PhysicalMemoryBytes(), where + ": the inflated entry", "physical memory"));
  std::string out(size, '\0');
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) return InternalError(where + ": zlib inflateInit2 failed");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  size_t in_left = compressed.size();
  size_t out_left = out.size();
  int result = Z_OK;
  while (result == Z_OK) {
    // zlib counts in uInt; feed large entries in pieces.
    const uInt in_chunk = static_cast<uInt>(std::min<size_t>(in_left, std::numeric_limits<uInt>::max()));
    const uInt out_chunk = static_cast<uInt>(std::min<size_t>(out_left, std::numeric_limits<uInt>::max()));
    stream.avail_in = in_chunk;
    stream.avail_out = out_chunk;
    result = inflate(&stream, Z_NO_FLUSH);
    in_left -= in_chunk - stream.avail_in;
    out_left -= out_chunk - stream.avail_out;
    if (result == Z_OK && stream.avail_in == in_chunk && stream.avail_out == out_chunk) break;  // no progress
  }
  inflateEnd(&stream);
  if (result != Z_STREAM_END || out_left != 0) return InvalidArgument(where + ": corrupt deflated data");
  return out;
}

Expected<NamedTensor> ReadEntry(const Reader& in, const Entry& entry, const std::string& label) {
  const std::string array_name = entry.name.substr(0, entry.name.size() - kNpySuffix.size());
  const std::string where = label + ": array '" + array_name + "'";
  if (entry.flags & 0x1) return Unsupported(where + ": encrypted zip entries are not supported");
  if (!in.Has(entry.local_offset, 30) || in.U32(entry.local_offset) != kLocalHeaderSignature) {
    return InvalidArgument(where + ": bad local header");
  }
  const uint64_t data_offset = entry.local_offset + 30 + in.U16(entry.local_offset + 26) + in.U16(entry.local_offset + 28);
  if (!in.Has(data_offset, entry.compressed_size)) return InvalidArgument(where + ": entry data past the end of file");
  const std::string_view stored = in.Slice(data_offset, entry.compressed_size);
  std::string inflated;
  std::string_view npy;
  switch (entry.method) {
    case kMethodStored:
      if (entry.compressed_size != entry.size) return InvalidArgument(where + ": stored entry sizes disagree");
      npy = stored;
      break;
    case kMethodDeflated: {
      ONNX_AMP_ASSIGN_OR_RETURN(inflated, Inflate(stored, entry.size, where));
      npy = inflated;
      break;
    }
    default:
      return Unsupported(where + ": zip compression method " + std::to_string(entry.method) + " is not supported");
  }
  uLong crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(npy.data()), npy.size());
  if (crc != entry.crc) return InvalidArgument(where + ": CRC mismatch (corrupt archive)");
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor tensor, ParseNpy(npy, where));
  return NamedTensor{array_name, std::move(tensor)};
}

void PutLe(std::string& out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

}  // namespace

Expected<std::vector<NamedTensor>> ParseNpz(std::string_view bytes, const std::string& label) {
  const Reader in(bytes);
  ONNX_AMP_ASSIGN_OR_RETURN(Directory dir, FindDirectory(in, label));
  std::vector<NamedTensor> arrays;
  std::set<std::string> names;
  uint64_t pos = dir.offset;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    if (!in.Has(pos, 46) || in.U32(pos) != kCentralHeaderSignature) {
      return InvalidArgument(label + ": corrupt zip central directory");
    }
    const uint16_t name_length = in.U16(pos + 28);
    const uint16_t extra_length = in.U16(pos + 30);
    const uint16_t comment_length = in.U16(pos + 32);
    if (!in.Has(pos + 46, size_t{name_length} + extra_length + comment_length)) {
      return InvalidArgument(label + ": corrupt zip central directory");
    }
    Entry entry;
    entry.name = std::string(in.Slice(pos + 46, name_length));
    entry.flags = in.U16(pos + 8);
    entry.method = in.U16(pos + 10);
    entry.crc = in.U32(pos + 16);
    entry.compressed_size = in.U32(pos + 20);
    entry.size = in.U32(pos + 24);
    entry.local_offset = in.U32(pos + 42);
    const std::string where = label + ": entry '" + entry.name + "'";
    ONNX_AMP_RETURN_IF_ERROR(ApplyZip64Extra(in.Slice(pos + 46 + name_length, extra_length), entry, where));
    pos += 46 + name_length + extra_length + comment_length;

    if (entry.name.size() <= kNpySuffix.size() || !entry.name.ends_with(kNpySuffix)) {
      return InvalidArgument(where + ": not a .npy array");
    }
    ONNX_AMP_ASSIGN_OR_RETURN(NamedTensor array, ReadEntry(in, entry, label));
    if (!names.insert(array.name).second) return InvalidArgument(label + ": array '" + array.name + "' appears twice");
    arrays.push_back(std::move(array));
  }
  return arrays;
}

Expected<std::vector<NamedTensor>> ReadNpzFile(const std::filesystem::path& path) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::string contents, ReadWholeFile(path));
  return ParseNpz(contents, path.string());
}

Status WriteNpzFile(const std::filesystem::path& path, const std::vector<NamedTensor>& arrays) {
  const std::string label = path.string();
  std::set<std::string> names;
  std::string archive;
  std::string directory;
  constexpr uint16_t kVersion = 20;         // zip 2.0: stored entries
  constexpr uint16_t kDosDate = (1 << 5) | 1;  // 1980-01-01, the zip epoch
  for (const NamedTensor& array : arrays) {
    const std::string where = label + ": array '" + array.name + "'";
    if (array.name.empty()) return InvalidArgument(label + ": an array has an empty name");
    if (!names.insert(array.name).second) return InvalidArgument(where + ": name appears twice");
    ONNX_AMP_ASSIGN_OR_RETURN(std::string npy, SerializeNpy(array.tensor, where));
    const std::string entry_name = array.name + std::string(kNpySuffix);
    if (npy.size() >= 0xFFFFFFFFu || archive.size() >= 0xFFFFFFFFu || entry_name.size() > 0xFFFF) {
      return Unsupported(where + ": archives over 4 GiB are not supported");
    }
    uLong crc = crc32_z(0L, Z_NULL, 0);
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(npy.data()), npy.size());
    const uint64_t local_offset = archive.size();

    PutLe(archive, kLocalHeaderSignature, 4);
    PutLe(archive, kVersion, 2);
    PutLe(archive, 0, 2);  // flags
    PutLe(archive, kMethodStored, 2);
    PutLe(archive, 0, 2);  // time
    PutLe(archive, kDosDate, 2);
    PutLe(archive, crc, 4);
    PutLe(archive, npy.size(), 4);
    PutLe(archive, npy.size(), 4);
    PutLe(archive, entry_name.size(), 2);
    PutLe(archive, 0, 2);  // extra length
    archive += entry_name;
    archive += npy;

    PutLe(directory, kCentralHeaderSignature, 4);
    PutLe(directory, kVersion, 2);  // made by
    PutLe(directory, kVersion, 2);  // needed
    PutLe(directory, 0, 2);
    PutLe(directory, kMethodStored, 2);
    PutLe(directory, 0, 2);
    PutLe(directory, kDosDate, 2);
    PutLe(directory, crc, 4);
    PutLe(directory, npy.size(), 4);
    PutLe(directory, npy.size(), 4);
    PutLe(directory, entry_name.size(), 2);
    PutLe(directory, 0, 2);  // extra
    PutLe(directory, 0, 2);  // comment
    PutLe(directory, 0, 2);  // disk
    PutLe(directory, 0, 2);  // internal attributes
    PutLe(directory, 0, 4);  // external attributes
    PutLe(directory, local_offset, 4);
    directory += entry_name;
  }
  if (arrays.size() >= 0xFFFF || archive.size() + directory.size() >= 0xFFFFFFFFu) {
    return Unsupported(label + ": archives over 4 GiB or 65535 arrays are not supported");
  }
  const uint64_t directory_offset = archive.size();
  archive += directory;
  PutLe(archive, kEndOfCentralSignature, 4);
  PutLe(archive, 0, 2);
  PutLe(archive, 0, 2);
  PutLe(archive, arrays.size(), 2);
  PutLe(archive, arrays.size(), 2);
  PutLe(archive, directory.size(), 4);
  PutLe(archive, directory_offset, 4);
  PutLe(archive, 0, 2);  // comment length
  return WriteWholeFile(path, archive);
}

}  // namespace onnx_amp
