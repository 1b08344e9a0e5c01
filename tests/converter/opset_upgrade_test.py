"""`onnx-amp convert --policy mixed_bfloat16` on torchvision-style conv nets exported by
PyTorch at opsets 13 and 17 (torchvision_style_nets.py, generated into --out): Conv,
ConvTranspose, pooling and InstanceNormalization admit bfloat16 only from opset 22, so by
default the converter raises the opset and every Conv runs in bfloat16; the output passes
the full ONNX checker, runs in ONNX Runtime (emulated: its CPU provider has no bfloat16
kernels) and matches float32 within the dtype-derived tolerance. --keep-opset keeps the
opset and says how many nodes stayed float32; --opset pins it; inspect, validate and
--auto show and make the same decision; a streamed external-data model is raised without
loading its weights.

Which nodes need opset 22 is computed here from the ONNX schemas (onnx.defs), not read
from the converter.

Run: python opset_upgrade_test.py --cli PATH/onnx-amp --out FOLDER
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
from onnx import TensorProto, defs, helper, numpy_helper

import torchvision_style_nets
from ort_emulation import emulate

ARGS = None
MODELS = {}  # (name, opset) -> path
BFLOAT16_UNIT_ROUNDOFF = 2.0 ** -8
RAISED_OPSET = 22


def run_cli(*arguments):
    return subprocess.run([ARGS.cli, *arguments], capture_output=True, text=True, timeout=300)


def convert(model_path, out_folder, *extra, policy="mixed_bfloat16"):
    """Converts with the CLI; returns (completed process, converted model, report)."""
    out = os.path.join(out_folder, "out.onnx")
    report_path = os.path.join(out_folder, "report.json")
    result = run_cli("convert", model_path, "-o", out, "--policy", policy, "--report", report_path, *extra)
    if result.returncode != 0:
        raise AssertionError(f"convert {' '.join(extra)} failed: {result.stderr}")
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    return result, onnx.load(out), report


def default_opset(model):
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def first_bfloat16_opset(op, opset):
    """The first opset from `opset` on whose schema for `op` admits bfloat16 for the
    type variable of its first output (the data path of these nets' ops)."""
    for version in range(opset, defs.onnx_opset_version() + 1):
        schema = defs.get_schema(op, version)
        variable = schema.outputs[0].type_str
        allowed = next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == variable)
        if "tensor(bfloat16)" in allowed:
            return version
    return None


def nodes_needing_newer_opset(model):
    """Nodes of float32 ops whose schema at the model opset lacks bfloat16: {op: count}."""
    opset = default_opset(model)
    needs = {}
    for node in model.graph.node:
        first = first_bfloat16_opset(node.op_type, opset)
        if node.op_type != "Constant" and first is not None and first > opset:
            needs[node.op_type] = needs.get(node.op_type, 0) + 1
    return needs


def initializer_types(model):
    return {t.name: t.data_type for t in model.graph.initializer}


def conv_weight_types(model):
    types = initializer_types(model)
    return [types[node.input[1]] for node in model.graph.node if node.op_type == "Conv"]


def low_path_depth(model, report):
    """The most bfloat16 nodes on one path from an input to an output."""
    dtype = {n["name"]: n["dtype"] for n in report["nodes"]}
    producer_depth = {}
    deepest = 0
    for node in model.graph.node:
        depth = max([producer_depth.get(name, 0) for name in node.input] or [0])
        depth += dtype.get(node.name) == "bfloat16"
        for name in node.output:
            producer_depth[name] = depth
        deepest = max(deepest, depth)
    return deepest


def run_ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def image(model, seed):
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {"image": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


class OpsetUpgradeTest(unittest.TestCase):
    def test_mixed_bfloat16_raises_the_opset_and_runs_every_conv_low(self):
        for (name, opset), path in MODELS.items():
            with self.subTest(model=name, opset=opset), tempfile.TemporaryDirectory() as tmp:
                original = onnx.load(path)
                needs = nodes_needing_newer_opset(original)
                self.assertIn("Conv", needs)
                self.assertEqual({first_bfloat16_opset(op, opset) for op in needs}, {RAISED_OPSET})
                result, converted, report = convert(path, tmp)

                self.assertIn(f"; opset {opset} -> {RAISED_OPSET} (bfloat16 Conv, ", result.stdout)
                self.assertIn(f"need opset {RAISED_OPSET})", result.stdout)
                for op in needs:
                    self.assertIn(op, result.stdout)
                self.assertEqual(default_opset(converted), RAISED_OPSET)
                self.assertEqual(report["opset"], RAISED_OPSET)
                change = report["opset_change"]
                self.assertEqual((change["action"], change["from"], change["to"]), ("raised", opset, RAISED_OPSET))
                self.assertEqual({n["op"]: n["nodes"] for n in change["needs"]}, needs)

                convs = [n for n in report["nodes"] if n["op"] == "Conv"]
                self.assertEqual(len(convs), sum(n.op_type == "Conv" for n in original.graph.node))
                self.assertTrue(all(n["dtype"] == "bfloat16" for n in convs), convs)
                self.assertEqual(set(conv_weight_types(converted)), {TensorProto.BFLOAT16})
                onnx.checker.check_model(converted, full_check=True)

                # Each bfloat16 node on a path rounds its output once and a Conv its weights
                # once more: independent roundings of relative size u add in quadrature,
                # so an output moves by about sqrt(2 d) u max|y| for a path of d low nodes.
                depth = low_path_depth(original, report)
                self.assertGreater(depth, 5)
                emulated = emulate(converted)
                for seed in range(3):
                    feeds = image(original, seed)
                    reference = run_ort(original, feeds)
                    got = run_ort(emulated, feeds)
                    tolerance = np.sqrt(2 * depth) * BFLOAT16_UNIT_ROUNDOFF * np.max(np.abs(reference))
                    np.testing.assert_allclose(got, reference, rtol=0, atol=tolerance)

    def test_keep_opset_keeps_it_and_counts_the_nodes_left_float32(self):
        for (name, opset), path in MODELS.items():
            with self.subTest(model=name, opset=opset), tempfile.TemporaryDirectory() as tmp:
                original = onnx.load(path)
                stayed = sum(nodes_needing_newer_opset(original).values())
                result, converted, report = convert(path, tmp, "--keep-opset")
                self.assertIn(f"; {stayed} nodes stayed float32: their ops accept bfloat16 only from opset "
                              f"{RAISED_OPSET} (Conv, ", result.stdout)
                self.assertTrue(result.stdout.rstrip().endswith("(drop --keep-opset to raise the opset)"),
                                result.stdout)
                self.assertEqual(default_opset(converted), opset)
                self.assertEqual(report["opset_change"]["action"], "kept_by_request")
                self.assertEqual(report["opset_change"]["nodes_below_needed_opset"], stayed)
                self.assertTrue(all(n["dtype"] == "float" for n in report["nodes"] if n["op"] == "Conv"))
                self.assertEqual(set(conv_weight_types(converted)), {TensorProto.FLOAT})
                onnx.checker.check_model(converted, full_check=True)

    def test_opset_flag_pins_it_and_conflicts_with_keep_opset(self):
        path = MODELS[("squeezenet", 13)]
        with tempfile.TemporaryDirectory() as tmp:
            _, raised, _ = convert(path, tmp)
            _, pinned, report = convert(path, tmp, "--opset", str(RAISED_OPSET))
            self.assertEqual(report["opset_change"]["action"], "pinned")
            self.assertEqual(pinned.graph, raised.graph)
            result, older, report = convert(path, tmp, "--opset", "17")
            self.assertEqual(default_opset(older), 17)
            self.assertIn("opset 13 -> 17 (pinned by --opset); ", result.stdout)
            self.assertEqual(set(conv_weight_types(older)), {TensorProto.FLOAT})

            out = os.path.join(tmp, "both.onnx")
            result = run_cli("convert", path, "-o", out, "--policy", "mixed_bfloat16", "--opset", "22",
                             "--keep-opset")
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn("--opset", result.stderr)
            self.assertIn("--keep-opset", result.stderr)
            self.assertFalse(os.path.exists(out))

    def test_float16_needs_no_newer_opset(self):
        for (name, opset), path in MODELS.items():
            with self.subTest(model=name, opset=opset), tempfile.TemporaryDirectory() as tmp:
                result, converted, report = convert(path, tmp, policy="mixed_float16")
                self.assertNotIn("opset", result.stdout)
                self.assertEqual(default_opset(converted), opset)
                self.assertEqual(report["opset_change"]["action"], "kept")
                self.assertEqual(set(conv_weight_types(converted)), {TensorProto.FLOAT16})

    def test_inspect_shows_the_decision(self):
        path = MODELS[("unet", 17)]
        with tempfile.TemporaryDirectory() as tmp:
            _, _, report = convert(path, tmp)
        text = run_cli("inspect", path, "--policy", "mixed_bfloat16")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn(f"  Opset: opset 17 -> {RAISED_OPSET} (bfloat16 Conv, MaxPool need opset {RAISED_OPSET})\n",
                      text.stdout)
        inspected = run_cli("inspect", path, "--policy", "mixed_bfloat16", "--json")
        precision = json.loads(inspected.stdout)["precision"]
        self.assertEqual(precision["opset"], RAISED_OPSET)
        self.assertEqual(precision["opset_change"], report["opset_change"])
        self.assertEqual([(n["name"], n["dtype"]) for n in precision["nodes"]],
                         [(n["name"], n["dtype"]) for n in report["nodes"]])
        kept = run_cli("inspect", path, "--policy", "mixed_bfloat16", "--keep-opset")
        self.assertIn("nodes stayed float32", kept.stdout)
        self.assertIn("  Opset: 17 (no op needs a newer one)\n", run_cli("inspect", path, "--policy", "float16").stdout)

    def test_inspect_tensor_core_rows_survive_nodes_the_version_converter_inserts(self):
        # ReduceMean-18 takes its axes as an input: raising the opset inserts a Constant
        # in front of the Conv and the MatMul, whose Tensor Core rows must stay theirs.
        rng = np.random.default_rng(3)
        graph = helper.make_graph(
            [helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[1], keepdims=1),
             helper.make_node("Conv", ["m", "K"], ["c"], name="conv"),
             helper.make_node("MatMul", ["c", "W"], ["y"], name="matmul")],
            "inserted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 4, 5])],
            [numpy_helper.from_array(rng.standard_normal((6, 1, 1, 1)).astype(np.float32), "K"),
             numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "W")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.onnx")
            onnx.save(model, path)
            result = run_cli("inspect", path, "--policy", "mixed_bfloat16", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        precision = json.loads(result.stdout)["precision"]
        self.assertEqual(precision["opset_change"]["action"], "raised")
        self.assertEqual(len(precision["nodes"]), len(model.graph.node) + 1)  # the inserted Constant
        rows = {row["node"]: (row["op"], row["dtype"], [(d["name"], d["value"]) for d in row["dims"]])
                for row in precision["tensor_core"]}
        self.assertEqual(rows, {"conv": ("Conv", "bfloat16", [("C_in/group", 1), ("C_out/group", 6)]),
                                "matmul": ("MatMul", "bfloat16", [("N", 5), ("K", 4)])})

    def test_validate_converts_with_the_raised_opset(self):
        for name in ("squeezenet", "unet"):
            with self.subTest(model=name):
                result = run_cli("validate", MODELS[(name, 13)], "--policy", "mixed_bfloat16", "--random",
                                 "--samples", "2", "--per-node")
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                self.assertTrue(result.stdout.startswith(
                    f"Converted mixed_bfloat16: opset 13 -> {RAISED_OPSET} (bfloat16 Conv, "), result.stdout)
                self.assertIn("PASSED", result.stdout)
                kept = run_cli("validate", MODELS[(name, 13)], "--policy", "mixed_bfloat16", "--keep-opset",
                               "--random", "--samples", "1")
                self.assertEqual(kept.returncode, 0, kept.stdout + kept.stderr)
                self.assertIn("nodes stayed float32", kept.stdout)

    def test_auto_search_raises_too(self):
        with tempfile.TemporaryDirectory() as tmp:
            result, converted, report = convert(MODELS[("unet", 13)], tmp, "--auto", "--random", "--samples", "2")
            self.assertEqual(default_opset(converted), RAISED_OPSET)
            self.assertEqual(report["opset_change"]["action"], "raised")
            # The search may keep a region float32; these nets validate with every Conv low.
            self.assertEqual(set(conv_weight_types(converted)), {TensorProto.BFLOAT16})
            onnx.checker.check_model(converted, full_check=True)

    def test_streamed_external_data_model_is_raised_without_losing_its_weights(self):
        # x[1,512,2,2] -> Conv(W: 512x512x1x1 float32, 1 MiB, streamed) -> Relu -> y
        rng = np.random.default_rng(5)
        weight = rng.standard_normal((512, 512, 1, 1)).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("Conv", ["x", "W"], ["c"], name="conv"), helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "W"], ["y"], name="conv2")],
            "streamed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512, 2, 2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 2, 2])], [numpy_helper.from_array(weight, "W")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "model.onnx")
            onnx.save(model, source, save_as_external_data=True, location="model.data", size_threshold=0)
            for extra in ([], ["--opset", str(RAISED_OPSET)]):
                with self.subTest(flags=extra):
                    result, converted, _ = convert(source, tmp, *extra)
                    self.assertEqual(default_opset(converted), RAISED_OPSET)
                    stored = onnx.load(os.path.join(tmp, "out.onnx"), load_external_data=False).graph.initializer[0]
                    self.assertEqual(stored.data_location, TensorProto.EXTERNAL)
                    converted_weight = next(t for t in converted.graph.initializer if t.name == "W")
                    self.assertEqual(converted_weight.data_type, TensorProto.BFLOAT16)
                    bits = np.frombuffer(converted_weight.raw_data, dtype=np.uint16).reshape(weight.shape)
                    expected = weight.astype(ml_dtypes.bfloat16).view(np.uint16)
                    np.testing.assert_array_equal(bits, expected)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--out", required=True, help="folder for the generated models")
    ARGS, rest = parser.parse_known_args()
    MODELS.update(torchvision_style_nets.export_all(ARGS.out))
    unittest.main(argv=[sys.argv[0], *rest])
