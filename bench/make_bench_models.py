#!/usr/bin/env python3
"""Writes the two float32 models the converter benchmark converts, deterministically.

  mlp_1gib.onnx (+ mlp_1gib.onnx.data): a deep MLP of 4096x4096 MatMul + Add + Relu
      layers, 16 of them, 1 GiB of weights saved as one external data file.
  chain_50k.onnx: 50,000 nodes in one long chain of small blocks mixing MatMul, Add,
      Relu, Mul, LayerNormalization and Softmax over 16-wide activations.

Usage: make_bench_models.py [--out DIR] [--only mlp|chain]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization needs 17
IR_VERSION = 8
MLP_WIDTH = 4096
MLP_LAYERS = 16  # 16 * 4096 * 4096 * 4 bytes = 1 GiB of MatMul weights
CHAIN_WIDTH = 16
CHAIN_NODES = 50_000
# MatMul, Add, Relu, Mul, LayerNormalization, Softmax: six nodes per block.
CHAIN_BLOCK_NODES = 6


def MakeModel(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnx-amp-bench")
    model.ir_version = IR_VERSION
    return model


def MakeMlp(path):
    rng = np.random.default_rng(1234)
    nodes, initializers = [], []
    x = "input"
    scale = np.float32(1.0 / np.sqrt(MLP_WIDTH))
    for layer in range(MLP_LAYERS):
        w = rng.standard_normal((MLP_WIDTH, MLP_WIDTH), dtype=np.float32)
        w *= scale
        b = np.full((MLP_WIDTH,), 0.01 * layer, dtype=np.float32)
        initializers.append(numpy_helper.from_array(w, f"w{layer}"))
        initializers.append(numpy_helper.from_array(b, f"b{layer}"))
        del w
        nodes.append(helper.make_node("MatMul", [x, f"w{layer}"], [f"mm{layer}"], name=f"matmul{layer}"))
        last = layer == MLP_LAYERS - 1
        nodes.append(helper.make_node("Add", [f"mm{layer}", f"b{layer}"],
                                      ["output" if last else f"add{layer}"], name=f"add{layer}"))
        if not last:
            nodes.append(helper.make_node("Relu", [f"add{layer}"], [f"relu{layer}"], name=f"relu{layer}"))
            x = f"relu{layer}"
    graph = helper.make_graph(
        nodes, "mlp_1gib",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", MLP_WIDTH])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", MLP_WIDTH])],
        initializers)
    model = MakeModel(graph)
    data_name = os.path.basename(path) + ".data"
    data_path = os.path.join(os.path.dirname(path), data_name)
    if os.path.exists(data_path):
        os.remove(data_path)  # onnx.save appends to an existing data file
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data_name, size_threshold=1024)


def MakeChain(path):
    rng = np.random.default_rng(5678)
    blocks = CHAIN_NODES // CHAIN_BLOCK_NODES
    remainder = CHAIN_NODES - blocks * CHAIN_BLOCK_NODES
    nodes, initializers = [], []
    # LayerNormalization scale/bias are shared: the chain stays small on disk.
    initializers.append(numpy_helper.from_array(np.ones(CHAIN_WIDTH, np.float32), "ln_scale"))
    initializers.append(numpy_helper.from_array(np.zeros(CHAIN_WIDTH, np.float32), "ln_bias"))
    x = "input"
    for i in range(blocks):
        w = (rng.standard_normal((CHAIN_WIDTH, CHAIN_WIDTH), dtype=np.float32) / 4).astype(np.float32)
        b = rng.standard_normal(CHAIN_WIDTH, dtype=np.float32) * np.float32(0.1)
        m = rng.uniform(0.5, 1.5, CHAIN_WIDTH).astype(np.float32)
        initializers += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}"),
                         numpy_helper.from_array(m, f"m{i}")]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"], name=f"matmul{i}"),
            helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"add{i}"], name=f"add{i}"),
            helper.make_node("Relu", [f"add{i}"], [f"relu{i}"], name=f"relu{i}"),
            helper.make_node("Mul", [f"relu{i}", f"m{i}"], [f"mul{i}"], name=f"mul{i}"),
            helper.make_node("LayerNormalization", [f"mul{i}", "ln_scale", "ln_bias"], [f"ln{i}"],
                             name=f"ln{i}", axis=-1),
            helper.make_node("Softmax", [f"ln{i}"], [f"sm{i}"], name=f"softmax{i}", axis=-1),
        ]
        x = f"sm{i}"
    for j in range(remainder):
        nodes.append(helper.make_node("Relu", [x], [f"tail{j}"], name=f"tail{j}"))
        x = f"tail{j}"
    nodes[-1].output[0] = "output"  # renamed rather than an extra Identity: exactly 50,000 nodes
    graph = helper.make_graph(
        nodes, "chain_50k",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", CHAIN_WIDTH])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", CHAIN_WIDTH])],
        initializers)
    model = MakeModel(graph)
    assert len(model.graph.node) == CHAIN_NODES, len(model.graph.node)
    onnx.save_model(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    parser.add_argument("--only", choices=["mlp", "chain"])
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.only in (None, "chain"):
        path = os.path.join(args.out, "chain_50k.onnx")
        MakeChain(path)
        onnx.checker.check_model(path)
        print(f"wrote {path}")
    if args.only in (None, "mlp"):
        path = os.path.join(args.out, "mlp_1gib.onnx")
        MakeMlp(path)
        onnx.checker.check_model(path)
        print(f"wrote {path} (+ {os.path.basename(path)}.data)")


if __name__ == "__main__":
    main()
