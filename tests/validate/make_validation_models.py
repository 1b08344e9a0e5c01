"""Writes the models the validation tests plant numeric failures in.

planted_overflow.onnx: x[batch,16] -> Linear -> Mul by 1e3 ('scale_up') -> Linear ->
  Mul by 1e-5 -> y. Finite in float32; the scaled activations (|h| ~ 1e5, from large
  first-layer weights) overflow float16, and the default painting runs 'scale_up' low
  because it sits between two MatMuls and its constant fits float16. The second Linear has small weights so that only 'scale_up' itself writes
  values beyond float16's range.
layernorm_overflow.onnx: a decomposed LayerNorm over 100000 elements of activations
  |x - mean| ~ 800: the squared deviations ('sq', ~6.4e5) overflow float16 and the
  ReduceSum over them adds 10^5 of them.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def planted_overflow(path):
    rng = np.random.default_rng(7)
    w1 = rng.normal(0.0, 100.0, (16, 16)).astype(np.float32)
    b1 = rng.normal(0.0, 0.1, (16,)).astype(np.float32)
    w2 = rng.normal(0.0, 0.002, (16, 16)).astype(np.float32)
    b2 = rng.normal(0.0, 0.1, (16,)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in [
        (w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"),
        (np.array(1e3, np.float32), "up"), (np.array(1e-5, np.float32), "down")]]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["mm1"], name="linear1_matmul"),
        helper.make_node("Add", ["mm1", "b1"], ["h1"], name="linear1_add"),
        helper.make_node("Mul", ["h1", "up"], ["scaled"], name="scale_up"),
        helper.make_node("MatMul", ["scaled", "w2"], ["mm2"], name="linear2_matmul"),
        helper.make_node("Add", ["mm2", "b2"], ["h2"], name="linear2_add"),
        helper.make_node("Mul", ["h2", "down"], ["y"], name="scale_down"),
    ]
    graph = helper.make_graph(
        nodes, "planted_overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])], inits)
    save(graph, path)


def layernorm_overflow(path):
    n = 100000
    inits = [numpy_helper.from_array(np.array(800.0, np.float32), "gain"),
             numpy_helper.from_array(np.array(5.0, np.float32), "offset"),
             numpy_helper.from_array(np.array(float(n), np.float32), "count"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
             numpy_helper.from_array(np.array([-1], np.int64), "axes")]
    nodes = [
        helper.make_node("Mul", ["x", "gain"], ["scaled"], name="gain_mul"),
        helper.make_node("Add", ["scaled", "offset"], ["a"], name="offset_add"),
        helper.make_node("ReduceMean", ["a"], ["mean"], name="mean", axes=[-1], keepdims=1),
        helper.make_node("Sub", ["a", "mean"], ["dev"], name="dev"),
        helper.make_node("Mul", ["dev", "dev"], ["sq"], name="square"),
        helper.make_node("ReduceSum", ["sq", "axes"], ["ssq"], name="sum_sq", keepdims=1),
        helper.make_node("Div", ["ssq", "count"], ["var"], name="var"),
        helper.make_node("Add", ["var", "eps"], ["var_eps"], name="var_eps"),
        helper.make_node("Sqrt", ["var_eps"], ["std"], name="std"),
        helper.make_node("Div", ["dev", "std"], ["y"], name="normalize"),
    ]
    graph = helper.make_graph(
        nodes, "layernorm_overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], inits)
    save(graph, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out_dir")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    planted_overflow(os.path.join(args.out_dir, "planted_overflow.onnx"))
    layernorm_overflow(os.path.join(args.out_dir, "layernorm_overflow.onnx"))


if __name__ == "__main__":
    main()
