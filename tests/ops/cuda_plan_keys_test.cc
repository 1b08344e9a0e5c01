// The host-side logic of the GPU GEMMs and convolutions, checked without a GPU: the
// cache keys tell every field apart (a different shape, layout, dtype, epilogue or
// alignment gets its own algorithm), pointer alignment, and the Tensor Core rules.
#include <gtest/gtest.h>

#include <unordered_set>

#include "ops/conv/conv_key.h"
#include "ops/linalg/gemm_key.h"

namespace onnx_amp {
namespace {

GemmKey Mlp() {
  GemmKey key;
  key.m = 8192;
  key.n = 4096;
  key.k = 4096;
  key.lda = 4096;
  key.ldb = 4096;
  key.ldc = 4096;
  key.operand_dtype = key.output_dtype = DType::kBFloat16;
  key.epilogue = GemmEpilogue::kReluBias;
  return key;
}

TEST(GemmKeyTest, EveryFieldSeparatesKeys) {
  const GemmKey base = Mlp();
  std::vector<GemmKey> variants(18, base);
  variants[0].m = 1024;
  variants[1].n = 10;
  variants[2].k = 784;
  variants[3].batch = 2;
  variants[4].lda = 4104;
  variants[5].ldb = 4104;
  variants[6].ldc = 4104;
  variants[7].stride_a = 1;
  variants[8].stride_b = 1;
  variants[9].stride_c = 1;
  variants[10].trans_a = true;
  variants[11].trans_b = true;
  variants[12].operand_dtype = DType::kFloat16;
  variants[13].output_dtype = DType::kFloat32;
  variants[14].epilogue = GemmEpilogue::kBias;
  variants[15].accumulate = true;
  variants[16].tf32 = true;
  variants[17].alignment = 8;
  std::unordered_set<GemmKey, GemmKeyHash> keys = {base};
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_FALSE(variants[i] == base) << "variant " << i;
    EXPECT_TRUE(keys.insert(variants[i]).second) << "variant " << i << " collides: " << variants[i].ToString();
  }
  EXPECT_EQ(keys.size(), variants.size() + 1);
  GemmKey same = Mlp();
  EXPECT_TRUE(same == base);
  EXPECT_EQ(GemmKeyHash{}(same), GemmKeyHash{}(base));
}

TEST(GemmKeyTest, DescribesTheProblem) {
  EXPECT_EQ(Mlp().ToString(), "8192x4096x4096 batch 1 bfloat16->bfloat16 epilogue relu+bias align 16");
}

TEST(GemmKeyTest, CommonAlignmentIsTheLargestPowerOfTwoDividingEveryAddress) {
  alignas(64) static char storage[256];
  EXPECT_EQ(CommonAlignment({storage, storage + 32, storage + 64}), 16);
  EXPECT_EQ(CommonAlignment({storage, storage + 8}), 8);
  EXPECT_EQ(CommonAlignment({storage + 4, storage}), 4);
  EXPECT_EQ(CommonAlignment({storage + 2}), 2);
  EXPECT_EQ(CommonAlignment({storage + 1, storage}), 1);
}

TEST(GemmKeyTest, TensorCoreRulesForSixteenBitOperands) {
  std::string reason;
  EXPECT_TRUE(MeetsTensorCoreRules(Mlp(), &reason)) << reason;
  GemmKey classes = Mlp();
  classes.n = 10;  // the guide's 10-class head
  classes.ldc = 10;
  EXPECT_FALSE(MeetsTensorCoreRules(classes, &reason));
  EXPECT_EQ(reason, "N = 10 is not a multiple of 8");
  GemmKey pixels = Mlp();
  pixels.k = 784;  // 28 * 28 = 98 * 8: fine
  EXPECT_TRUE(MeetsTensorCoreRules(pixels));
  GemmKey odd = Mlp();
  odd.lda = 4100;
  EXPECT_FALSE(MeetsTensorCoreRules(odd, &reason));
  EXPECT_EQ(reason, "lda = 4100 is not a multiple of 8");
  GemmKey misaligned = Mlp();
  misaligned.alignment = 8;
  EXPECT_FALSE(MeetsTensorCoreRules(misaligned, &reason));
  EXPECT_EQ(reason, "pointers are 8-byte aligned, not 16");
}

TEST(GemmKeyTest, Float32UsesTensorCoresOnlyThroughTf32WithMultiplesOfFour) {
  GemmKey key = Mlp();
  key.operand_dtype = key.output_dtype = DType::kFloat32;
  std::string reason;
  EXPECT_FALSE(MeetsTensorCoreRules(key, &reason));
  EXPECT_EQ(reason, "float operands without TF32 do not use Tensor Cores");
  key.tf32 = true;
  key.n = 4092;  // a multiple of 4, not of 8
  key.ldb = key.ldc = 4092;
  EXPECT_TRUE(MeetsTensorCoreRules(key, &reason)) << reason;
}

ConvKey ResNetStem() {
  ConvKey key;
  key.dtype = DType::kFloat16;
  key.x_dims = {128, 3, 224, 224};
  key.w_dims = {64, 3, 7, 7};
  key.y_dims = {128, 64, 112, 112};
  key.pads_begin = key.pads_end = {3, 3};
  key.strides = {2, 2};
  key.dilations = {1, 1};
  return key;
}

TEST(ConvKeyTest, EveryFieldSeparatesKeys) {
  const ConvKey base = ResNetStem();
  std::vector<ConvKey> variants(11, base);
  variants[0].direction = ConvDirection::kBackwardData;
  variants[1].direction = ConvDirection::kBackwardFilter;
  variants[2].dtype = DType::kBFloat16;
  variants[3].x_dims[0] = 64;
  variants[4].w_dims[0] = 32;
  variants[5].y_dims[2] = 111;
  variants[6].pads_begin = {2, 3};
  variants[7].pads_end = {3, 2};
  variants[8].strides = {1, 1};
  variants[9].dilations = {2, 2};
  variants[10].tf32 = true;
  std::unordered_set<ConvKey, ConvKeyHash> keys = {base};
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_FALSE(variants[i] == base) << "variant " << i;
    EXPECT_TRUE(keys.insert(variants[i]).second) << "variant " << i << " collides";
  }
  ConvKey aligned = base;
  aligned.alignment = 4;
  EXPECT_FALSE(aligned == base);
  EXPECT_TRUE(ResNetStem() == base);
}

TEST(ConvKeyTest, DescribesTheProblem) {
  EXPECT_EQ(ResNetStem().ToString(),
            "forward float16 x[128,3,224,224] w[64,3,7,7] y[128,64,112,112] pads[3,3][3,3] strides[2,2] "
            "dilations[1,1] align 16");
}

}  // namespace
}  // namespace onnx_amp
