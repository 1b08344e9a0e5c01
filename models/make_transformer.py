"""A transformer encoder block for token classification.

tokens int64 [batch, seq], mask float [batch, seq] (1 keep, 0 padding)
  embed: Gather(token table) + positional table rows [0, seq) (Shape -> Slice)
  attention: 4 heads, MatMul+Add Q/K/V projections, QK^T scaled by 1/sqrt(d_head),
             additive mask bias (1 - mask) * -10000 over the keys, Softmax over keys,
             MatMul with V, output projection, residual Add, LayerNormalization
  feed-forward: MatMul+Add -> GELU (0.5*x*(1+Erf(x/sqrt(2)))) -> MatMul+Add,
                residual Add, LayerNormalization
  classifier: MatMul+Add to 8 classes (tensor "logits") -> Softmax -> probs [batch, seq, 8]

Projection kernels are [in, out] (x @ W + b), Glorot-uniform, biases zero.
Embedding tables use Keras' Embedding default, U(-0.05, 0.05).
"""

import math
import sys

import numpy as np

import generate_common as common

SEED = 64
VOCAB = 1000
D_MODEL = 64
NUM_HEADS = 4
D_HEAD = D_MODEL // NUM_HEADS
D_FF = 4 * D_MODEL
MAX_SEQ = 128
NUM_CLASSES = 8
MASK_BIAS = -10000.0
LN_EPSILON = 1e-5


def build():
    rng = np.random.default_rng(SEED)
    g = common.GraphBuilder("transformer_block")
    tokens = g.add_input("tokens", np.int64, ["batch", "seq"])
    mask = g.add_input("mask", np.float32, ["batch", "seq"])

    def const(name, values, dtype):
        return g.add_initializer(name, np.array(values, dtype=dtype))

    def dense(name, inputs, n_in, n_out, output=None):
        kernel = g.add_initializer(f"{name}.kernel", common.dense_kernel(rng, n_in, n_out))
        bias = g.add_initializer(f"{name}.bias", np.zeros(n_out, dtype=np.float32))
        h = g.add_node("MatMul", f"{name}.matmul", [inputs, kernel])
        outputs = [output] if output else None
        return g.add_node("Add", f"{name}.add", [h, bias], outputs)

    def layer_norm(name, inputs):
        scale = g.add_initializer(f"{name}.scale", np.ones(D_MODEL, dtype=np.float32))
        bias = g.add_initializer(f"{name}.bias", np.zeros(D_MODEL, dtype=np.float32))
        return g.add_node("LayerNormalization", name, [inputs, scale, bias],
                          axis=-1, epsilon=LN_EPSILON)

    # Embeddings: token rows plus the first seq rows of the positional table.
    token_table = g.add_initializer(
        "embed.tokens", rng.uniform(-0.05, 0.05, size=(VOCAB, D_MODEL)).astype(np.float32))
    position_table = g.add_initializer(
        "embed.positions", rng.uniform(-0.05, 0.05, size=(MAX_SEQ, D_MODEL)).astype(np.float32))
    token_embed = g.add_node("Gather", "embed.gather", [token_table, tokens], axis=0)
    seq_len = g.add_node("Shape", "embed.seq_len", [tokens], start=1, end=2)
    positions = g.add_node("Slice", "embed.positions_slice",
                           [position_table, const("embed.zero", [0], np.int64), seq_len,
                            const("embed.axis", [0], np.int64)])
    x = g.add_node("Add", "embed.add", [token_embed, positions])

    # Multi-head self-attention.
    split_heads = const("attn.split_shape", [0, 0, NUM_HEADS, D_HEAD], np.int64)
    q = dense("attn.q", x, D_MODEL, D_MODEL)
    k = dense("attn.k", x, D_MODEL, D_MODEL)
    v = dense("attn.v", x, D_MODEL, D_MODEL)
    q = g.add_node("Reshape", "attn.q_split", [q, split_heads])
    k = g.add_node("Reshape", "attn.k_split", [k, split_heads])
    v = g.add_node("Reshape", "attn.v_split", [v, split_heads])
    q = g.add_node("Transpose", "attn.q_heads", [q], perm=[0, 2, 1, 3])  # [b, h, s, d]
    k = g.add_node("Transpose", "attn.k_heads", [k], perm=[0, 2, 3, 1])  # [b, h, d, s]
    v = g.add_node("Transpose", "attn.v_heads", [v], perm=[0, 2, 1, 3])  # [b, h, s, d]
    scores = g.add_node("MatMul", "attn.scores", [q, k])
    scores = g.add_node("Mul", "attn.scale", [
        scores, const("attn.scale_factor", 1.0 / math.sqrt(D_HEAD), np.float32)])
    # (1 - mask) * -10000, broadcast to [b, 1, 1, s] over heads and queries.
    dropped = g.add_node("Sub", "attn.mask_invert", [const("attn.one", 1.0, np.float32), mask])
    mask_bias = g.add_node("Mul", "attn.mask_bias", [
        dropped, const("attn.mask_value", MASK_BIAS, np.float32)])
    mask_bias = g.add_node("Unsqueeze", "attn.mask_expand", [
        mask_bias, const("attn.mask_axes", [1, 2], np.int64)])
    scores = g.add_node("Add", "attn.masked_scores", [scores, mask_bias])
    weights = g.add_node("Softmax", "attn.softmax", [scores], axis=-1)
    context = g.add_node("MatMul", "attn.context", [weights, v])
    context = g.add_node("Transpose", "attn.merge_transpose", [context], perm=[0, 2, 1, 3])
    context = g.add_node("Reshape", "attn.merge_heads", [
        context, const("attn.merge_shape", [0, 0, D_MODEL], np.int64)])
    attn_out = dense("attn.out", context, D_MODEL, D_MODEL)
    x = layer_norm("attn.norm", g.add_node("Add", "attn.residual", [x, attn_out]))

    # Feed-forward with the exact Erf-based GELU.
    h = dense("ffn.up", x, D_MODEL, D_FF)
    scaled = g.add_node("Div", "ffn.gelu_div", [h, const("ffn.sqrt2", math.sqrt(2.0), np.float32)])
    erf = g.add_node("Erf", "ffn.gelu_erf", [scaled])
    erf = g.add_node("Add", "ffn.gelu_add", [erf, const("ffn.one", 1.0, np.float32)])
    h = g.add_node("Mul", "ffn.gelu_mul", [h, erf])
    h = g.add_node("Mul", "ffn.gelu_half", [h, const("ffn.half", 0.5, np.float32)])
    ffn_out = dense("ffn.down", h, D_FF, D_MODEL)
    x = layer_norm("ffn.norm", g.add_node("Add", "ffn.residual", [x, ffn_out]))

    logits = dense("classifier", x, D_MODEL, NUM_CLASSES, output="logits")
    g.add_node("Softmax", "softmax", [logits], ["probs"], axis=-1)
    g.add_output("probs", np.float32, ["batch", "seq", NUM_CLASSES])
    return g


def main(argv=None):
    parser = common.output_arg_parser(__doc__.splitlines()[0], "transformer_block.onnx")
    args = parser.parse_args(argv)
    build().save(args.output)


if __name__ == "__main__":
    sys.exit(main())
