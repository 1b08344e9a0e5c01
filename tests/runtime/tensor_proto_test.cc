// TensorProto <-> Tensor: raw_data round trips for every dtype, the typed fields ONNX
// writers use, and the errors for what the runtime does not support; the value of a
// Constant node from each of its value attributes.
#include "runtime/io/tensor_proto.h"

#include <onnx/onnx_pb.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

namespace onnx_amp {
namespace {

Tensor Pattern(DType dtype, Shape shape) {
  Tensor t = Tensor::Empty(dtype, std::move(shape));
  uint8_t* bytes = static_cast<uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.bytes(); ++i) bytes[i] = static_cast<uint8_t>(dtype == DType::kBool ? i % 2 : i * 37 + 11);
  return t;
}

TEST(TensorProtoTest, RawDataRoundTripEveryDType) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                      DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kUInt16, DType::kUInt32,
                      DType::kUInt64, DType::kBool}) {
    const Tensor original = Pattern(dtype, {2, 3, 5});
    auto proto = TensorToProto(original, "t");
    ASSERT_TRUE(proto.ok()) << proto.status().message();
    EXPECT_EQ(proto->data_type(), ToOnnx(dtype));
    auto back = TensorFromProto(*proto);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->dtype(), dtype);
    EXPECT_EQ(back->shape(), (Shape{2, 3, 5}));
    EXPECT_EQ(std::memcmp(back->raw_data(), original.raw_data(), original.bytes()), 0) << DTypeName(dtype);
  }
}

TEST(TensorProtoTest, ScalarAndEmpty) {
  auto scalar = TensorFromProto(*TensorToProto(Pattern(DType::kInt64, {}), "s"));
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->rank(), 0);
  EXPECT_EQ(scalar->num_elements(), 1);
  auto empty = TensorFromProto(*TensorToProto(Tensor::Empty(DType::kFloat32, {3, 0}), "e"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->shape(), (Shape{3, 0}));
}

TEST(TensorProtoTest, HalfTypesInInt32Data) {
  onnx::TensorProto proto;
  proto.set_name("h");
  proto.set_data_type(ToOnnx(DType::kFloat16));
  proto.add_dims(3);
  proto.add_int32_data(0x3C00);  // 1.0
  proto.add_int32_data(0xC000);  // -2.0
  proto.add_int32_data(0x7C00);  // inf
  auto half = TensorFromProto(proto);
  ASSERT_TRUE(half.ok()) << half.status().message();
  const uint16_t* bits = static_cast<const uint16_t*>(half->raw_data());
  EXPECT_EQ(HalfBitsToFloat(bits[0]), 1.0f);
  EXPECT_EQ(HalfBitsToFloat(bits[1]), -2.0f);
  EXPECT_TRUE(std::isinf(HalfBitsToFloat(bits[2])));

  proto.set_data_type(ToOnnx(DType::kBFloat16));
  proto.set_int32_data(0, 0x3FC0);  // 1.5
  auto bf16 = TensorFromProto(proto);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(BFloat16BitsToFloat(static_cast<const uint16_t*>(bf16->raw_data())[0]), 1.5f);
}

TEST(TensorProtoTest, TypedFields) {
  onnx::TensorProto proto;
  proto.set_name("typed");
  proto.add_dims(2);
  proto.set_data_type(ToOnnx(DType::kBool));
  proto.add_int32_data(0);
  proto.add_int32_data(1);
  auto flags = TensorFromProto(proto);
  ASSERT_TRUE(flags.ok());
  EXPECT_FALSE(flags->data<bool>()[0]);
  EXPECT_TRUE(flags->data<bool>()[1]);

  proto.clear_int32_data();
  proto.set_data_type(ToOnnx(DType::kUInt32));
  proto.add_uint64_data(4000000000u);
  proto.add_uint64_data(7);
  auto u32 = TensorFromProto(proto);
  ASSERT_TRUE(u32.ok());
  EXPECT_EQ(u32->data<uint32_t>()[0], 4000000000u);

  proto.clear_uint64_data();
  proto.set_data_type(ToOnnx(DType::kInt8));
  proto.add_int32_data(-128);
  proto.add_int32_data(127);
  auto i8 = TensorFromProto(proto);
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ(i8->data<int8_t>()[0], -128);

  proto.clear_int32_data();
  proto.set_data_type(ToOnnx(DType::kFloat64));
  proto.add_double_data(0.1);
  proto.add_double_data(-3e300);
  auto f64 = TensorFromProto(proto);
  ASSERT_TRUE(f64.ok());
  EXPECT_EQ(f64->data<double>()[1], -3e300);
}

TEST(TensorProtoTest, BoolRawBytesOtherThanZeroOrOneAreErrors) {
  onnx::TensorProto proto;
  proto.set_name("mask");
  proto.add_dims(3);
  proto.set_data_type(ToOnnx(DType::kBool));
  proto.set_raw_data(std::string("\x01\x00\x02", 3));
  auto refused = TensorFromProto(proto);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidModel);
  EXPECT_EQ(refused.status().message(), "tensor 'mask': boolean array holds a byte other than 0 or 1");
  proto.set_raw_data(std::string("\x01\x00\x01", 3));
  EXPECT_TRUE(TensorFromProto(proto).ok());
}

TEST(TensorProtoTest, StringsAreUnsupported) {
  onnx::TensorProto proto;
  proto.set_name("words");
  proto.set_data_type(ToOnnx(DType::kString));
  proto.add_dims(1);
  proto.add_string_data("hello");
  auto tensor = TensorFromProto(proto);
  ASSERT_FALSE(tensor.ok());
  EXPECT_EQ(tensor.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(tensor.status().message(), "tensor 'words': element type string is not supported");
}

TEST(TensorProtoTest, SizeMismatchesAreErrors) {
  onnx::TensorProto proto;
  proto.set_name("short");
  proto.set_data_type(ToOnnx(DType::kFloat32));
  proto.add_dims(4);
  proto.set_raw_data(std::string(12, '\0'));
  auto raw = TensorFromProto(proto);
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.status().code(), ErrorCode::kInvalidModel);
  EXPECT_NE(raw.status().message().find("tensor 'short': raw_data holds 12 bytes"), std::string::npos);

  proto.clear_raw_data();
  proto.add_float_data(1.0f);
  auto typed = TensorFromProto(proto);
  ASSERT_FALSE(typed.ok());
  EXPECT_NE(typed.status().message().find("holds 1 values"), std::string::npos);

  proto.set_dims(0, -2);
  EXPECT_FALSE(TensorFromProto(proto).ok());
}

TEST(TensorProtoTest, FileRoundTripAndErrors) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "tensor_proto_test";
  std::filesystem::create_directories(dir);
  const Tensor original = Pattern(DType::kFloat16, {4, 2});
  ASSERT_TRUE(WriteTensorProtoFile(dir / "t.pb", original, "weights").ok());
  auto back = ReadTensorProtoFile(dir / "t.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->name, "weights");
  EXPECT_EQ(std::memcmp(back->tensor.raw_data(), original.raw_data(), original.bytes()), 0);

  auto missing = ReadTensorProtoFile(dir / "none.pb");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("none.pb"), std::string::npos);
}

onnx::NodeProto ConstantNode(const onnx::AttributeProto& value) {
  onnx::NodeProto node;
  node.set_op_type("Constant");
  *node.add_attribute() = value;
  return node;
}

TEST(TensorProtoTest, ConstantNodeValueFromEachAttribute) {
  onnx::AttributeProto attribute;
  attribute.set_name("value_ints");
  attribute.add_ints(-3);
  attribute.add_ints(int64_t{1} << 40);
  Expected<Tensor> ints = ConstantNodeValue(ConstantNode(attribute));
  ASSERT_TRUE(ints.ok()) << ints.status().message();
  ASSERT_EQ(ints->dtype(), DType::kInt64);
  ASSERT_EQ(ints->shape(), (Shape{2}));
  EXPECT_EQ(ints->data<int64_t>()[0], -3);
  EXPECT_EQ(ints->data<int64_t>()[1], int64_t{1} << 40);

  attribute = {};
  attribute.set_name("value_floats");
  attribute.add_floats(0.5f);
  Expected<Tensor> floats = ConstantNodeValue(ConstantNode(attribute));
  ASSERT_TRUE(floats.ok());
  ASSERT_EQ(floats->dtype(), DType::kFloat32);
  ASSERT_EQ(floats->shape(), (Shape{1}));
  EXPECT_EQ(floats->data<float>()[0], 0.5f);

  attribute = {};
  attribute.set_name("value_int");
  attribute.set_i(7);
  Expected<Tensor> scalar_int = ConstantNodeValue(ConstantNode(attribute));
  ASSERT_TRUE(scalar_int.ok());
  EXPECT_EQ(scalar_int->shape(), Shape{});
  EXPECT_EQ(*scalar_int->data<int64_t>(), 7);

  attribute = {};
  attribute.set_name("value_float");
  attribute.set_f(-2.25f);
  Expected<Tensor> scalar_float = ConstantNodeValue(ConstantNode(attribute));
  ASSERT_TRUE(scalar_float.ok());
  EXPECT_EQ(scalar_float->dtype(), DType::kFloat32);
  EXPECT_EQ(*scalar_float->data<float>(), -2.25f);

  attribute = {};
  attribute.set_name("value");
  *attribute.mutable_t() = *TensorToProto(Pattern(DType::kInt32, {2, 2}), "t");
  Expected<Tensor> tensor = ConstantNodeValue(ConstantNode(attribute));
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->dtype(), DType::kInt32);
  EXPECT_EQ(std::memcmp(tensor->raw_data(), Pattern(DType::kInt32, {2, 2}).raw_data(), tensor->bytes()), 0);
}

TEST(TensorProtoTest, ConstantNodeWithoutSupportedValueIsAnError) {
  onnx::AttributeProto attribute;
  attribute.set_name("value_strings");
  attribute.add_strings("a");
  Expected<Tensor> strings = ConstantNodeValue(ConstantNode(attribute));
  ASSERT_FALSE(strings.ok());
  EXPECT_EQ(strings.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(strings.status().message().find("value_strings"), std::string::npos);

  onnx::NodeProto bare;
  bare.set_op_type("Constant");
  Expected<Tensor> none = ConstantNodeValue(bare);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kInvalidModel);
}

}  // namespace
}  // namespace onnx_amp
