"""A small CNN for 28x28 single-channel images.

x [batch, 1, 28, 28]
  -> conv1 (3x3, 16, pad 1) -> bn1 -> relu1 -> pool1 (max 2x2)
  -> conv2 (3x3, 32, pad 1) -> bn2 -> relu2 -> pool2 (max 2x2)
  -> flatten -> dense (Gemm 32*7*7 -> 10, tensor "logits") -> softmax -> probs [batch, 10]

BatchNormalization runs in inference mode with gamma 1, beta 0 and a
non-trivial running mean/variance (see generate_common.batch_norm_params).
Every op means the same at --opset 11 to 17 (Softmax on rank 2 normalises each row).
"""

import sys

import numpy as np

import generate_common as common

SEED = 28
NUM_CLASSES = 10
BN_EPSILON = 1e-3  # Keras' BatchNormalization default


def build(opset=common.OPSET):
    rng = np.random.default_rng(SEED)
    g = common.GraphBuilder("cnn", opset)
    x = g.add_input("x", np.float32, ["batch", 1, 28, 28])

    def conv_bn_relu_pool(index, inputs, in_ch, out_ch):
        h = common.add_conv_bn(g, rng, index, inputs, in_ch, out_ch, BN_EPSILON)
        h = g.add_node("Relu", f"relu{index}", [h])
        return g.add_node("MaxPool", f"pool{index}", [h], kernel_shape=[2, 2], strides=[2, 2])

    h = conv_bn_relu_pool(1, x, 1, 16)
    h = conv_bn_relu_pool(2, h, 16, 32)
    h = g.add_node("Flatten", "flatten", [h], axis=1)
    common.add_classifier_head(g, rng, h, 32 * 7 * 7, NUM_CLASSES)
    return g


def main(argv=None):
    parser = common.output_arg_parser(__doc__.splitlines()[0], "cnn.onnx")
    common.add_opset_arg(parser)
    args = parser.parse_args(argv)
    build(args.opset).save(args.output)


if __name__ == "__main__":
    sys.exit(main())
