"""The MLP of the Keras mixed-precision guide.

x [batch, 784] -> dense1 (Gemm, U) -> relu1 -> dense2 (Gemm, U) -> relu2
  -> dense3 (Gemm, 10) -> softmax -> probs [batch, 10]

Dense layers are Gemm with transB=0 and the kernel laid out [in, out] as in
Keras. dense3 writes the tensor "logits", which training uses in place of the
Softmax output; only "probs" is a graph output. With --dense matmul each dense
layer is MatMul (node denseN.matmul) then Add (node denseN), as tf2onnx exports
Keras' Dense; the weights are the same. Every op means the same at --opset 11 to
17 (Softmax on rank 2 normalises each row).
"""

import sys

import numpy as np

import generate_common as common

SEED = 784
NUM_FEATURES = 784
NUM_CLASSES = 10


def build(units, opset=common.OPSET, dense_op="gemm"):
    rng = np.random.default_rng(SEED)
    g = common.GraphBuilder(f"mlp_u{units}", opset)
    x = g.add_input("x", np.float32, ["batch", NUM_FEATURES])

    def dense(name, inputs, n_in, n_out, output=None):
        kernel = g.add_initializer(f"{name}.kernel", common.dense_kernel(rng, n_in, n_out))
        bias = g.add_initializer(f"{name}.bias", np.zeros(n_out, dtype=np.float32))
        outputs = [output] if output else None
        if dense_op == "matmul":
            product = g.add_node("MatMul", f"{name}.matmul", [inputs, kernel])
            return g.add_node("Add", name, [product, bias], outputs)
        return g.add_node("Gemm", name, [inputs, kernel, bias], outputs,
                          alpha=1.0, beta=1.0, transA=0, transB=0)

    h = g.add_node("Relu", "relu1", [dense("dense1", x, NUM_FEATURES, units)])
    h = g.add_node("Relu", "relu2", [dense("dense2", h, units, units)])
    logits = dense("dense3", h, units, NUM_CLASSES, output="logits")
    g.add_node("Softmax", "softmax", [logits], ["probs"], axis=-1)
    g.add_output("probs", np.float32, ["batch", NUM_CLASSES])
    return g


def main(argv=None):
    parser = common.output_arg_parser(__doc__.splitlines()[0], "mlp_u64.onnx")
    parser.add_argument("--units", type=int, default=64,
                        help="hidden width U (64 as the guide uses on CPU, 4096 on GPU)")
    parser.add_argument("--dense", choices=("gemm", "matmul"), default="gemm",
                        help="dense layers as Gemm (default) or as MatMul + Add")
    common.add_opset_arg(parser)
    args = parser.parse_args(argv)
    if args.units <= 0:
        parser.error("--units must be positive")
    build(args.units, args.opset, args.dense).save(args.output)


if __name__ == "__main__":
    sys.exit(main())
