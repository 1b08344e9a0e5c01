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
        return common.add_conv_bn(g, rng, index, inputs, CHANNELS, CHANNELS, BN_EPSILON)

    h = g.add_node("Relu", "relu1", [conv_bn(1, x)])
    h = g.add_node("Add", "skip", [conv_bn(2, h), x])
    h = g.add_node("Relu", "relu_out", [h])
    h = g.add_node("GlobalAveragePool", "gap", [h])
    h = g.add_node("Flatten", "flatten", [h], axis=1)
    common.add_classifier_head(g, rng, h, CHANNELS, NUM_CLASSES)
    return g


def main(argv=None):
    parser = common.output_arg_parser(__doc__.splitlines()[0], "resnet_block.onnx")
    args = parser.parse_args(argv)
    build().save(args.output)


if __name__ == "__main__":
    sys.exit(main())
