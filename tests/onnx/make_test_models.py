"""Writes the models the onnx I/O tests read, with the current onnx package.

usage: make_test_models.py OUT_DIR

OUT_DIR/opset21/model.onnx   ai.onnx opset 21 (Reshape, Add, LayerNormalization, Gelu,
                             Cast), a model-local function, metadata and doc strings
OUT_DIR/external/model.onnx  weights in external data "weights/w.bin", including a
                             Constant inside an If branch
OUT_DIR/expected/<name>.bin  the float32 values of each external tensor, little-endian
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import convert_model_to_external_data


def opset21_model():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 8])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [6, 8])
    rng = np.random.default_rng(21)
    inits = [
        numpy_helper.from_array(np.array([6, 8], dtype=np.int64), "shape"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "ln_scale"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "ln_bias"),
    ]
    nodes = [
        helper.make_node("Reshape", ["X", "shape"], ["x2d"], name="reshape"),
        helper.make_node("Add", ["x2d", "bias"], ["biased"], name="add"),
        helper.make_node("LayerNormalization", ["biased", "ln_scale", "ln_bias"], ["normed"], name="ln", axis=-1,
                         epsilon=1e-5),
        helper.make_node("Gelu", ["normed"], ["act"], name="gelu", approximate="tanh"),
        helper.make_node("DoubleIt", ["act"], ["doubled"], name="double_it", domain="test.local"),
        helper.make_node("Cast", ["doubled"], ["Y"], name="cast", to=TensorProto.FLOAT16),
    ]
    graph = helper.make_graph(nodes, "opset21", [x], [y], inits, doc_string="graph doc")
    graph.value_info.append(helper.make_tensor_value_info("x2d", TensorProto.FLOAT, [6, 8]))
    double_it = helper.make_function(
        "test.local", "DoubleIt", ["a"], ["b"],
        [helper.make_node("Add", ["a", "a"], ["b"])],
        [helper.make_opsetid("", 21)], doc_string="b = a + a")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("test.local", 1)],
                              functions=[double_it], producer_name="onnx-amp-tests", doc_string="model doc")
    helper.set_model_props(model, {"author": "onnx-amp", "purpose": "round trip"})
    onnx.checker.check_model(model, full_check=True)
    return model


def external_model():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    branch_value = np.arange(300, dtype=np.float32) * 0.25
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 256])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 64])
    z = helper.make_tensor_value_info("Z", TensorProto.FLOAT, [300])
    then_graph = helper.make_graph(
        [helper.make_node("Constant", [], ["then_out"], name="then_const",
                          value=numpy_helper.from_array(branch_value, "branch_value"))],
        "then", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [300])])
    else_graph = helper.make_graph(
        [helper.make_node("Constant", [], ["else_out"], name="else_const",
                          value=numpy_helper.from_array(np.zeros(300, dtype=np.float32), "zeros"))],
        "else", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [300])])
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "B"], ["Y"], name="add"),
        helper.make_node("If", ["cond"], ["Z"], name="branch", then_branch=then_graph, else_branch=else_graph),
    ]
    graph = helper.make_graph(nodes, "external", [x, cond], [y, z],
                              [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # ONNX Runtime 1.22 reads IR versions up to 10
    onnx.checker.check_model(model, full_check=True)
    expected = {"W": w, "B": b, "branch_value": branch_value, "zeros": np.zeros(300, dtype=np.float32)}
    return model, expected


def main():
    out_dir = sys.argv[1]
    os.makedirs(os.path.join(out_dir, "opset21"), exist_ok=True)
    onnx.save_model(opset21_model(), os.path.join(out_dir, "opset21", "model.onnx"))

    model, expected = external_model()
    model_dir = os.path.join(out_dir, "external")
    os.makedirs(os.path.join(model_dir, "weights"), exist_ok=True)
    data_path = os.path.join(model_dir, "weights", "w.bin")
    if os.path.exists(data_path):
        os.remove(data_path)  # onnx appends to an existing data file
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="weights/w.bin", size_threshold=0,
                                   convert_attribute=True)
    onnx.save_model(model, os.path.join(model_dir, "model.onnx"))
    onnx.checker.check_model(os.path.join(model_dir, "model.onnx"))
    os.makedirs(os.path.join(out_dir, "expected"), exist_ok=True)
    for name, value in expected.items():
        value.astype("<f4").tofile(os.path.join(out_dir, "expected", name + ".bin"))


if __name__ == "__main__":
    main()
