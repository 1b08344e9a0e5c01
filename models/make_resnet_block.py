"""A ResNet-style basic block with a classifier head.

x [batch, 8, 16, 16]
  -> conv1 (3x3, 8, pad 1) -> bn1 -> relu1 -> conv2 (3x3, 8, pad 1) -> bn2
  -> skip (Add with x) -> relu_out -> gap (GlobalAveragePool) -> flatten
  -> dense (Gemm 8 -> 10, tensor "logits") -> softmax -> probs [batch, 10]

BatchNormalization runs in inference mode with gamma 1, beta 0 and a
non-trivial running mean/variance (see generate_common.batch_norm_params).
"""

import sys

import numpy as np

import generate_common as common

SEED = 16
CHANNELS = 8
NUM_CLASSES = 10
BN_EPSILON = 1e-3  # Keras' BatchNormalization default


def build():
    rng = np.random.default_rng(SEED)
    g = common.GraphBuilder("resnet_block")
    x = g.add_input("x", np.float32, ["batch", CHANNELS, 16, 16])

    def conv_bn(index, inputs):
        weight = g.add_initializer(f"conv{index}.weight",
                                   common.conv_kernel(rng, CHANNELS, CHANNELS, 3, 3))
        bias = g.add_initializer(f"conv{index}.bias", np.zeros(CHANNELS, dtype=np.float32))
        h = g.add_node("Conv", f"conv{index}", [inputs, weight, bias],
                       kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        bn = [g.add_initializer(f"bn{index}.{field}", value)
              for field, value in zip(("scale", "bias", "mean", "var"),
                                      common.batch_norm_params(rng, CHANNELS))]
        return g.add_node("BatchNormalization", f"bn{index}", [h, *bn], epsilon=BN_EPSILON)

    h = g.add_node("Relu", "relu1", [conv_bn(1, x)])
    h = g.add_node("Add", "skip", [conv_bn(2, h), x])
    h = g.add_node("Relu", "relu_out", [h])
    h = g.add_node("GlobalAveragePool", "gap", [h])
    h = g.add_node("Flatten", "flatten", [h], axis=1)
    kernel = g.add_initializer("dense.kernel", common.dense_kernel(rng, CHANNELS, NUM_CLASSES))
    bias = g.add_initializer("dense.bias", np.zeros(NUM_CLASSES, dtype=np.float32))
    logits = g.add_node("Gemm", "dense", [h, kernel, bias], ["logits"],
                        alpha=1.0, beta=1.0, transA=0, transB=0)
    g.add_node("Softmax", "softmax", [logits], ["probs"], axis=-1)
    g.add_output("probs", np.float32, ["batch", NUM_CLASSES])
    return g


def main(argv=None):
    parser = common.output_arg_parser(__doc__.splitlines()[0], "resnet_block.onnx")
    args = parser.parse_args(argv)
    build().save(args.output)


if __name__ == "__main__":
    sys.exit(main())
