"""The converter pains of converter-anchors (d) that need ONNX Runtime or the CLI: each
model is converted with `onnx-amp convert` and run in ONNX Runtime against the float32
original. Methods are named after the pain (p01_... is pain 1), as the C++ tests in
pains_test.cc are.

ONNX Runtime's CPU provider has float16 kernels for the ops used here but no bfloat16
ones, so bfloat16 models run emulated: each bfloat16 value is computed in float32 and
rounded once through Cast(bfloat16) -> Cast(float), which is our numeric contract.

Run: python pains_ort_test.py --cli PATH/onnx-amp
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ort_emulation import emulate

ARGS = None
F32 = TensorProto.FLOAT
# Unit roundoff (half an ulp at 1) of each low dtype.
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "mixed_float16": 2.0 ** -11,
                 "bfloat16": 2.0 ** -8, "mixed_bfloat16": 2.0 ** -8}


def make_model(nodes, inputs, outputs, initializers, opset=17):
    graph = helper.make_graph(nodes, "pains", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    onnx.checker.check_model(model, full_check=True)
    return model


def f32(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def i64(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.int64), name)


def value(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def convert(model, policy, *extra):
    """Converts with the CLI; returns (converted model, report, stdout)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "in.onnx")
        target = os.path.join(tmp, "out.onnx")
        report_path = os.path.join(tmp, "report.json")
        onnx.save(model, source)
        result = subprocess.run([ARGS.cli, "convert", source, "-o", target, "--policy", policy,
                                 "--report", report_path, *extra], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise AssertionError(f"onnx-amp convert --policy {policy} failed: {result.stderr}")
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        return onnx.load(target), report, result.stdout


def node_dtypes(report):
    return {node["name"]: node["dtype"] for node in report["nodes"]}


def all_nodes(graph):
    """Every node of `graph` and of the graphs nested in it."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attr.g)


def run(model, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: unused-initializer notices are expected
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def runnable(model, policy):
    return emulate(model) if "bfloat16" in policy else model


def with_abs_initializers(model):
    """`model` with |w| for every float initializer: fed |x|, it bounds the magnitude of
    every value of a graph of MatMuls, Resizes (convex weights) and 1-Lipschitz ops."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for i, tensor in enumerate(copy.graph.initializer):
        if tensor.data_type == F32:
            copy.graph.initializer[i].CopyFrom(f32(tensor.name, np.abs(numpy_helper.to_array(tensor))))
    return copy


def assert_close(test, got, reference, bound, roundings, u, label):
    """|got - reference| <= roundings * u * bound elementwise: each rounding on a path
    moves a value by at most u times the magnitude bound of the values it mixes."""
    test.assertEqual(got.shape, reference.shape, label)
    test.assertTrue(np.all(np.isfinite(got)), label)
    error = np.abs(got.astype(np.float64) - reference.astype(np.float64))
    limit = roundings * u * bound.astype(np.float64)
    test.assertTrue(np.all(error <= limit), f"{label}: max error {error.max():.3g}, limit at worst "
                                            f"{limit.flat[np.argmax(error - limit)]:.3g}")


def resize_model(opset, sizes):
    """x[1,1,4,4] -> MatMul -> Resize(linear, x2) -> MatMul -> y[1,1,8,8]."""
    rng = np.random.default_rng(opset)
    inits = [f32("W", rng.standard_normal((4, 4)) * 0.5), f32("W8", rng.standard_normal((8, 8)) * 0.5),
             f32("scales", [1, 1, 2, 2]), f32("scales_empty", np.zeros(0)), f32("roi", [0, 0, 0, 0, 1, 1, 1, 1]),
             i64("sizes", [1, 1, 8, 8])]
    if opset == 10:
        resize_inputs = ["h", "scales"]
    elif opset == 11:  # roi and scales are required at opset 11
        resize_inputs = ["h", "roi", "scales_empty", "sizes"] if sizes else ["h", "roi", "scales"]
    else:
        resize_inputs = ["h", "", "", "sizes"] if sizes else ["h", "roi", "scales"]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm1"),
             helper.make_node("Resize", resize_inputs, ["r"], name="resize", mode="linear"),
             helper.make_node("MatMul", ["r", "W8"], ["y"], name="mm2")]
    return make_model(nodes, [value("x", F32, [1, 1, 4, 4])], [value("y", F32, [1, 1, 8, 8])], inits, opset)


def empty_optional_model():
    """Resize with zero-length scales and with absent roi/scales, in the main graph and
    in a Loop body that reads the empty scales and the sizes from the outer graph."""
    rng = np.random.default_rng(2)
    inits = [f32("W", rng.standard_normal((4, 4)) * 0.5), f32("W8", rng.standard_normal((8, 8)) * 0.5),
             f32("scales_empty", np.zeros(0)), i64("sizes", [1, 1, 8, 8]), i64("sizes_same", [2, 4]),
             i64("trip", 2)]
    # The body's zero-length scales is its own initializer: inference tells an empty
    # scales from a given one only by its data.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         helper.make_node("MatMul", ["v_in", "W"], ["b_h"], name="body_mm1"),
         helper.make_node("Resize", ["b_h", "", "body_scales_empty", "sizes_same"], ["b_r"], name="body_resize"),
         helper.make_node("Resize", ["b_r", "", "", "sizes_same"], ["b_r2"], name="body_resize_absent"),
         helper.make_node("MatMul", ["b_r2", "W"], ["v_out"], name="body_mm2")],
        "body",
        [value("iter", TensorProto.INT64, []), value("cond_in", TensorProto.BOOL, []), value("v_in", F32, [2, 4])],
        [value("cond_out", TensorProto.BOOL, []), value("v_out", F32, [2, 4])], [f32("body_scales_empty", np.zeros(0))])
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm1"),
             helper.make_node("Resize", ["h", "", "scales_empty", "sizes"], ["r1"], name="resize_zero_length"),
             helper.make_node("Resize", ["r1", "", "", "sizes"], ["r2"], name="resize_absent"),
             helper.make_node("MatMul", ["r2", "W8"], ["y"], name="mm2"),
             helper.make_node("Loop", ["trip", "", "v0"], ["v_final"], name="loop", body=body)]
    return make_model(nodes, [value("x", F32, [1, 1, 4, 4]), value("v0", F32, [2, 4])],
                      [value("y", F32, [1, 1, 8, 8]), value("v_final", F32, [2, 4])], inits, 13)


def control_flow_model():
    """If reading outer x and W; Loop with carried state; Scan; a Loop whose body holds
    an If (two levels). Weights 0.25: every value is bounded by the run on |inputs|."""
    w = f32("W", np.full((4, 4), 0.25))
    then_branch = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["t_h"], name="then_mm1"),
         helper.make_node("MatMul", ["t_h", "W"], ["t_out"], name="then_mm2")],
        "then", [], [value("t_out", F32, [2, 4])])
    else_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["e_out"], name="else_id")], "else", [],
                                    [value("e_out", F32, [2, 4])])
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["l_cond"], ["l_cond_out"], name="loop_cond"),
         helper.make_node("MatMul", ["l_v", "W"], ["l_h"], name="loop_mm1"),
         helper.make_node("Tanh", ["l_h"], ["l_t"], name="loop_tanh"),
         helper.make_node("MatMul", ["l_t", "W"], ["l_v_out"], name="loop_mm2")],
        "loop_body", [value("l_iter", TensorProto.INT64, []), value("l_cond", TensorProto.BOOL, []),
                      value("l_v", F32, [2, 4])],
        [value("l_cond_out", TensorProto.BOOL, []), value("l_v_out", F32, [2, 4])])
    scan_body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["s_h"], name="scan_mm1"),
         helper.make_node("MatMul", ["s_h", "W"], ["s_h2"], name="scan_mm2"),
         helper.make_node("Add", ["s_in", "s_h2"], ["s_out"], name="scan_add"),
         helper.make_node("Relu", ["s_h2"], ["y_t"], name="scan_relu")],
        "scan_body", [value("s_in", F32, [1, 4]), value("x_t", F32, [1, 4])],
        [value("s_out", F32, [1, 4]), value("y_t", F32, [1, 4])])
    inner_then = helper.make_graph(
        [helper.make_node("MatMul", ["o_v", "W"], ["it_h"], name="inner_mm1"),
         helper.make_node("MatMul", ["it_h", "W"], ["it_out"], name="inner_mm2")],
        "inner_then", [], [value("it_out", F32, [2, 4])])
    inner_else = helper.make_graph([helper.make_node("Identity", ["o_v"], ["ie_out"], name="inner_else_id")],
                                   "inner_else", [], [value("ie_out", F32, [2, 4])])
    outer_body = helper.make_graph(
        [helper.make_node("Identity", ["o_cond"], ["o_cond_out"], name="outer_cond"),
         helper.make_node("If", ["cond"], ["o_v_out"], name="inner_if", then_branch=inner_then,
                          else_branch=inner_else)],
        "outer_body", [value("o_iter", TensorProto.INT64, []), value("o_cond", TensorProto.BOOL, []),
                       value("o_v", F32, [2, 4])],
        [value("o_cond_out", TensorProto.BOOL, []), value("o_v_out", F32, [2, 4])])
    nodes = [helper.make_node("If", ["cond"], ["if_y"], name="if", then_branch=then_branch, else_branch=else_branch),
             helper.make_node("Loop", ["trip", "", "x"], ["loop_v"], name="loop", body=loop_body),
             helper.make_node("Scan", ["s0", "xs"], ["scan_s", "scan_ys"], name="scan", body=scan_body,
                              num_scan_inputs=1),
             helper.make_node("Loop", ["trip", "", "x"], ["nested_v"], name="outer_loop", body=outer_body)]
    inputs = [value("cond", TensorProto.BOOL, []), value("x", F32, [2, 4]), value("xs", F32, [3, 1, 4]),
              value("s0", F32, [1, 4])]
    outputs = [value("if_y", F32, [2, 4]), value("loop_v", F32, [2, 4]), value("scan_s", F32, [1, 4]),
               value("scan_ys", F32, [3, 1, 4]), value("nested_v", F32, [2, 4])]
    return make_model(nodes, inputs, outputs, [w, i64("trip", 3)])


def epsilon_model():
    """q = h / (sqrt(hv) + 1e-12) between MatMuls, h = x W, hv = v W."""
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm_x"),
             helper.make_node("MatMul", ["v", "W"], ["hv"], name="mm_v"),
             helper.make_node("Sqrt", ["hv"], ["sd"], name="sqrt"),
             helper.make_node("Add", ["sd", "eps"], ["den"], name="guard"),
             helper.make_node("Div", ["h", "den"], ["q"], name="div"),
             helper.make_node("MatMul", ["q", "W"], ["y"], name="mm_out")]
    return make_model(nodes, [value("x", F32, [2, 4]), value("v", F32, [2, 4])], [value("y", F32, [2, 4])],
                      [f32("W", np.full((4, 4), 0.25)), f32("eps", 1e-12)])


def conv_length_model():
    """len = Cast<int64>(Floor((L + 2p - k) / s) + 1), L = 5000, p = 1, k = 3, s = 2: 2500
    (float16 arithmetic gives 2499), next to a MatMul the policies convert."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "axis1"], ["L"], name="gather"),
             helper.make_node("Cast", ["L"], ["Lf"], name="to_float", to=F32),
             helper.make_node("Add", ["Lf", "two_p"], ["padded"], name="pad"),
             helper.make_node("Sub", ["padded", "k"], ["d"], name="sub"),
             helper.make_node("Div", ["d", "s"], ["q"], name="div"),
             helper.make_node("Floor", ["q"], ["fq"], name="floor"),
             helper.make_node("Add", ["fq", "one"], ["n"], name="add_one"),
             helper.make_node("Cast", ["n"], ["len"], name="to_int", to=TensorProto.INT64),
             helper.make_node("Slice", ["x", "starts", "ends", "axis1"], ["xs"], name="slice"),
             helper.make_node("MatMul", ["xs", "W"], ["y"], name="mm")]
    inits = [i64("axis1", [1]), f32("two_p", 2.0), f32("k", 3.0), f32("s", 2.0), f32("one", 1.0),
             i64("starts", [0]), i64("ends", [4]), f32("W", np.full((4, 4), 0.25))]
    return make_model(nodes, [value("x", F32, [1, 5000])],
                      [value("len", TensorProto.INT64, [1]), value("y", F32, [1, 4])], inits)


def conv_model(opset):
    return make_model([helper.make_node("Conv", ["x", "K"], ["y"], name="conv")], [value("x", F32, [1, 1, 4, 4])],
                      [value("y", F32, [1, 1, 4, 4])], [f32("K", np.full((1, 1, 1, 1), 0.5))], opset)


class PainsOrt(unittest.TestCase):
    def p01_resize_scales_and_roi_stay_float(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
        for opset, sizes in [(10, False), (11, False), (11, True), (13, False), (13, True), (18, False),
                             (18, True), (19, False), (19, True)]:
            model = resize_model(opset, sizes)
            reference = run(model, {"x": x})["y"]
            bound = run(with_abs_initializers(model), {"x": np.abs(x)})["y"]
            for policy in ("mixed_float16", "mixed_bfloat16", "float16"):
                with self.subTest(opset=opset, sizes=sizes, policy=policy):
                    # The opset is kept so that the Resize inputs compare one to one
                    # (raising it from 10 inserts roi); opset_upgrade_test.py covers the raise.
                    converted, report, _ = convert(model, policy, "--keep-opset")
                    onnx.checker.check_model(converted, full_check=True)
                    inits = {t.name: t for t in converted.graph.initializer}
                    for name in ("scales", "scales_empty", "roi"):
                        self.assertEqual(inits[name].data_type, F32, name)
                    resize = next(n for n in converted.graph.node if n.op_type == "Resize")
                    original = next(n for n in model.graph.node if n.op_type == "Resize")
                    self.assertEqual(list(resize.input)[1:], list(original.input)[1:])
                    # ONNX Runtime loads it (float16 natively, bfloat16 emulated) and
                    # matches float32: x, h, r and y are each rounded once; ORT's
                    # float16 kernels may also round each 4- or 8-term dot product and
                    # the interpolation (2 more).
                    roundings = 4 if "bfloat16" in policy else 4 + 4 + 8 + 2
                    got = run(runnable(converted, policy), {"x": x})["y"]
                    assert_close(self, got, reference, bound, roundings, UNIT_ROUNDOFF[policy], "y")
                    if policy == "mixed_bfloat16" and opset < 13:
                        self.assertEqual(node_dtypes(report)["resize"], "float")
                    else:
                        self.assertNotEqual(node_dtypes(report)["resize"], "float")

    def p02_empty_optional_inputs_get_no_cast(self):
        model = empty_optional_model()
        rng = np.random.default_rng(3)
        feeds = {"x": rng.standard_normal((1, 1, 4, 4)).astype(np.float32),
                 "v0": rng.standard_normal((2, 4)).astype(np.float32)}
        reference = run(model, feeds)
        bound = run(with_abs_initializers(model), {k: np.abs(v) for k, v in feeds.items()})
        for policy in ("mixed_float16", "float16"):
            with self.subTest(policy=policy):
                converted, report, _ = convert(model, policy)
                dtypes = node_dtypes(report)
                for name in ("resize_zero_length", "resize_absent", "body_resize", "body_resize_absent"):
                    self.assertEqual(dtypes[name], "float16", name)
                body = next(n for n in converted.graph.node if n.op_type == "Loop").attribute[0].g
                for graph in (converted.graph, body):
                    for node in graph.node:
                        if node.op_type == "Cast":
                            self.assertNotIn(node.input[0], ("", "scales_empty", "body_scales_empty"))
                # The failure was at run time ("Either sizes or scales must be
                # provided"): it loads and runs, close to float32. Main graph: x, h, r1,
                # r2, y rounded; 2 Loop iterations of v_in, b_h, b_r, b_r2, v_out; plus
                # ORT's float16 dot products (4 or 8 terms).
                got = run(converted, feeds)
                assert_close(self, got["y"], reference["y"], bound["y"], 5 + 4 + 8, UNIT_ROUNDOFF[policy], "y")
                assert_close(self, got["v_final"], reference["v_final"], bound["v_final"], 2 * (5 + 8),
                             UNIT_ROUNDOFF[policy], "v_final")

    def p05_subgraph_casts_stay_in_their_scope(self):
        model = control_flow_model()
        x = np.array([[0.5, -1.0, 0.75, 0.3], [-0.2, 0.9, -0.6, 0.1]], np.float32)
        xs = np.linspace(-0.9, 0.9, 12, dtype=np.float32).reshape(3, 1, 4)
        s0 = np.array([[0.1, -0.2, 0.3, -0.4]], np.float32)
        feeds = {"cond": np.array(True), "x": x, "xs": xs, "s0": s0}
        reference = run(model, feeds)
        bound = run(model, {"cond": np.array(True), "x": np.abs(x), "xs": np.abs(xs), "s0": np.abs(s0)})
        converted, report, _ = convert(model, "mixed_float16")
        onnx.checker.check_model(converted, full_check=True)
        onnx.shape_inference.infer_shapes(converted, check_type=True, strict_mode=True)
        # No Cast in the main graph (all of it is control flow writing float32
        # outputs); every inserted Cast is inside a body.
        self.assertEqual(sum(n.op_type == "Cast" for n in converted.graph.node), 0)
        self.assertEqual(sum(n.op_type == "Cast" for n in all_nodes(converted.graph)), report["casts_inserted"])
        self.assertGreaterEqual(report["casts_inserted"], 9)
        # Three iterations of up to 4 roundings, each MatMul a 4-term dot product that
        # ORT's float16 kernel may round (2 per iteration): 3 * (4 + 2 * 4).
        got = run(converted, feeds)
        for name in reference:
            assert_close(self, got[name], reference[name], bound[name], 3 * (4 + 2 * 4), UNIT_ROUNDOFF["float16"],
                         name)

    def p06_user_round_trip_casts_survive(self):
        # float -> int32 -> float truncates and float -> float16 -> float rounds: the
        # user's numerics, kept through conversion.
        nodes = [helper.make_node("Cast", ["x"], ["xi"], name="truncate", to=TensorProto.INT32),
                 helper.make_node("Cast", ["xi"], ["xf"], name="back", to=F32),
                 helper.make_node("MatMul", ["xf", "I"], ["y"], name="mm"),
                 helper.make_node("Cast", ["x"], ["x16"], name="round16", to=TensorProto.FLOAT16),
                 helper.make_node("Cast", ["x16"], ["x32"], name="widen", to=F32),
                 helper.make_node("Exp", ["x32"], ["z"], name="exp")]
        model = make_model(nodes, [value("x", F32, [1, 4])], [value("y", F32, [1, 4]), value("z", F32, [1, 4])],
                           [f32("I", np.eye(4))])
        feeds = {"x": np.array([[1.7, -2.5, 3.9, 1 + 2 ** -12]], np.float32)}
        for policy in ("mixed_float16", "mixed_bfloat16"):
            with self.subTest(policy=policy):
                converted, report, _ = convert(model, policy)
                names = {n.name for n in converted.graph.node}
                self.assertLessEqual({"truncate", "back", "round16", "widen"}, names)
                self.assertEqual(report["casts_inserted"], sum(n.op_type == "Cast" for n in converted.graph.node) - 4)
                got = run(runnable(converted, policy), feeds)
                np.testing.assert_array_equal(got["y"], [[1, -2, 3, 1]])
                # 1 + 2^-12 rounds to 1 in float16: z = e to float32 accuracy.
                self.assertAlmostEqual(float(got["z"][0, 3]), np.e, delta=4e-7 * np.e)

    def p07_reconversion_is_idempotent(self):
        model = control_flow_model()
        for policy in ("mixed_float16", "mixed_bfloat16", "float16", "bfloat16"):
            with self.subTest(policy=policy):
                once, _, _ = convert(model, policy)
                twice, report, _ = convert(once, policy)
                self.assertEqual(twice.SerializeToString(), once.SerializeToString())
                self.assertEqual(report["casts_inserted"], 0)

    def p10_tiny_epsilon_output_finite(self):
        model = epsilon_model()
        feeds = {"x": np.array([[0, 0, 0, 0], [0.5, 1.0, 0.25, 0.75]], np.float32),
                 "v": np.array([[0, 0, 0, 0], [0.3, 0.6, 0.9, 0.2]], np.float32)}
        reference = run(model, feeds)["y"]
        self.assertTrue(np.all(reference[0] == 0))
        for policy in ("mixed_float16", "mixed_bfloat16"):
            with self.subTest(policy=policy):
                converted, report, _ = convert(model, policy)
                self.assertEqual(report["clamped"], [])
                got = run(runnable(converted, policy), feeds)["y"]
                self.assertTrue(np.all(np.isfinite(got)), got)
                self.assertTrue(np.all(got[0] == 0), got)
                # Positive row: 7 roundings to first order (see pains_test.cc), plus ORT's
                # float16 4-term dot products in 3 MatMuls.
                roundings = 8 if policy == "mixed_bfloat16" else 8 + 3 * 4
                assert_close(self, got[1], reference[1], reference[1], roundings, UNIT_ROUNDOFF[policy], "y")
        # Everything in float16 (the plain policy) cannot keep 1e-12: not silently.
        _, report, stdout = convert(model, "float16")
        eps = [c for c in report["clamped"] if c["name"] == "eps"]
        self.assertEqual(len(eps), 1, report["clamped"])
        self.assertEqual(eps[0]["flushed_to_zero"], 1)
        self.assertIn("'eps'", stdout)

    def p11_large_constants_reported(self):
        c = np.array([70000, -1e9, np.inf, 1e-9], np.float32)
        nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm1"),
                 helper.make_node("Add", ["h", "C"], ["a"], name="add"),
                 helper.make_node("MatMul", ["a", "W"], ["y"], name="mm2")]
        model = make_model(nodes, [value("x", F32, [2, 4])], [value("y", F32, [2, 4]), value("a", F32, [2, 4])],
                           [f32("W", np.eye(4)), f32("C", c)])
        zeros = {"x": np.zeros((2, 4), np.float32)}
        # mixed_float16: C's reader stays float32 (init_max), so C is exact and the
        # report names it as the reason.
        converted, report, _ = convert(model, "mixed_float16")
        add = next(node for node in report["nodes"] if node["name"] == "add")
        self.assertEqual(add["dtype"], "float")
        self.assertIn("'C'", add["reason"])
        self.assertEqual(report["clamped"], [])
        stored = numpy_helper.to_array(next(t for t in converted.graph.initializer if t.name == "C"))
        np.testing.assert_array_equal(stored, c)
        np.testing.assert_array_equal(run(converted, zeros)["a"][0], c)
        # float16: clamped to +-65504 (inf kept, 1e-9 flushed), and said so.
        converted, report, stdout = convert(model, "float16")
        self.assertEqual(report["clamped"], [{"name": "C", "clamped": 2, "worst": float(np.float32(-1e9)),
                                              "flushed_to_zero": 1}])
        self.assertIn("clamped 'C': 2 values beyond +-65504", stdout)
        stored = numpy_helper.to_array(next(t for t in converted.graph.initializer if t.name == "C"))
        self.assertEqual(stored.dtype, np.float16)
        np.testing.assert_array_equal(stored, np.array([65504, -65504, np.inf, 0], np.float16))
        # Clamped, not overflowed: 0 + C runs to +-65504, inf stays inf.
        np.testing.assert_array_equal(run(converted, zeros)["a"][0], np.array([65504, -65504, np.inf, 0], np.float32))
        for policy in ("mixed_bfloat16", "bfloat16"):
            with self.subTest(policy=policy):
                converted, report, stdout = convert(model, policy)
                self.assertEqual(report["clamped"], [])
                self.assertNotIn("clamped", stdout)
                stored = next(t for t in converted.graph.initializer if t.name == "C")
                self.assertEqual(stored.data_type, TensorProto.BFLOAT16)
                bits = np.frombuffer(stored.raw_data, np.uint16)
                np.testing.assert_array_equal(bits, c.astype(ml_dtypes.bfloat16).view(np.uint16))

    def p12_shape_math_stays_exact(self):
        model = conv_length_model()
        feeds = {"x": np.linspace(-1, 1, 5000, dtype=np.float32).reshape(1, 5000)}
        self.assertEqual(run(model, feeds)["len"].tolist(), [2500])
        for policy in ("mixed_float16", "float16", "mixed_bfloat16", "bfloat16"):
            with self.subTest(policy=policy):
                converted, report, _ = convert(model, policy)
                self.assertNotEqual(node_dtypes(report)["mm"], "float")
                got = run(runnable(converted, policy), feeds)
                self.assertEqual(got["len"].tolist(), [2500])

    def p15_rounding_nan_and_bfloat16_conv_opset(self):
        # Initializer conversion agrees bit for bit with independent RNE references
        # (ml_dtypes for bfloat16, NumPy for float16) on ties, random values and NaNs.
        rng = np.random.default_rng(15)
        ties16 = (np.array([0x3F808000, 0x3F818000, 0xBF808000, 0x3F80FFFF], np.uint32)).view(np.float32)
        ties_half = np.float32(1) + np.array([2 ** -11, 3 * 2 ** -11, 5 * 2 ** -11], np.float32)
        nans = np.array([0x7FC00000, 0x7F800001, 0xFFFFFFFF], np.uint32).view(np.float32)
        values = np.concatenate([ties16, ties_half, -ties_half, np.float32([3 * 2 ** -25]),
                                 rng.standard_normal(50).astype(np.float32) * 100, nans]).astype(np.float32)
        n = values.size
        nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm1"),
                 helper.make_node("Add", ["h", "C"], ["a"], name="add"),
                 helper.make_node("MatMul", ["a", "W"], ["y"], name="mm2")]
        model = make_model(nodes, [value("x", F32, [1, n])], [value("y", F32, [1, n])],
                           [f32("W", np.eye(n)), f32("C", values)])
        finite = np.isfinite(values)
        with np.errstate(invalid="ignore"):  # the NaNs
            references = (("mixed_bfloat16", values.astype(ml_dtypes.bfloat16)),
                          ("mixed_float16", values.astype(np.float16)))
        for policy, reference in references:
            with self.subTest(policy=policy):
                converted, _, _ = convert(model, policy)
                stored = next(t for t in converted.graph.initializer if t.name == "C")
                bits = np.frombuffer(stored.raw_data, np.uint16)
                np.testing.assert_array_equal(bits[finite], reference.view(np.uint16)[finite])
                exponent = 0x7F80 if policy == "mixed_bfloat16" else 0x7C00
                fraction = 0x007F if policy == "mixed_bfloat16" else 0x03FF
                self.assertTrue(np.all((bits[~finite] & exponent) == exponent), bits[~finite])
                self.assertTrue(np.all((bits[~finite] & fraction) != 0), bits[~finite])
        # Conv-21 admits no bfloat16: with --keep-opset, kept float32 with the reason; by
        # default, as with --opset 22, the model is upgraded.
        kept, report, _ = convert(conv_model(21), "mixed_bfloat16", "--keep-opset")
        conv = next(node for node in report["nodes"] if node["name"] == "conv")
        self.assertEqual(conv["dtype"], "float")
        self.assertIn("does not admit bfloat16", conv["reason"])
        self.assertEqual(kept.opset_import[0].version, 21)
        for extra in ([], ["--opset", "22"]):
            with self.subTest(flags=extra):
                upgraded, report, _ = convert(conv_model(21), "mixed_bfloat16", *extra)
                onnx.checker.check_model(upgraded, full_check=True)
                self.assertEqual(report["opset"], 22)
                self.assertEqual(node_dtypes(report)["conv"], "bfloat16")
                self.assertEqual([o.version for o in upgraded.opset_import if o.domain in ("", "ai.onnx")], [22])
                x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 1, 4, 4)
                got = run(emulate(upgraded), {"x": x})["y"]
                # y = 0.5 x: x rounded to bfloat16 once, the product exact, rounded once more.
                assert_close(self, got, 0.5 * x, np.abs(0.5 * x), 2, UNIT_ROUNDOFF["bfloat16"], "y")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    ARGS, rest = parser.parse_known_args()
    loader = unittest.TestLoader()
    loader.testMethodPrefix = "p"
    unittest.main(argv=[sys.argv[0], *rest], testLoader=loader)
