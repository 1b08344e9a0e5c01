"""End-to-end tests of `onnx-amp inspect --policy`: per-node dtypes and reasons, the Cast
count (checked against `convert --report` and the converted file), the Tensor Core
report, the --json keys, and that nothing is written.

Run: python inspect_policy_test.py --cli PATH/onnx-amp --models PATH/models
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ARGS = None

PRECISION_KEYS = {"policy", "target", "hardware", "opset", "opset_change", "casts_inserted", "casts_retargeted",
                  "float_nodes", "converted_nodes", "percent_converted", "clamped", "unknown_ops", "nodes", "tensor_core"}
NODE_KEYS = {"graph", "name", "op", "dtype", "class", "reason"}
MISS_KEYS = {"node", "op", "dtype", "dims"}
DIM_KEYS = {"name", "value", "multiple_of_8"}


def run_cli(*arguments, cwd=None):
    result = subprocess.run([ARGS.cli, *arguments], capture_output=True, text=True, timeout=120, cwd=cwd)
    if result.returncode != 0:
        raise AssertionError(f"onnx-amp {' '.join(arguments)} failed ({result.returncode}): {result.stderr}")
    return result.stdout


def inspect_json(model, *flags):
    return json.loads(run_cli("inspect", model, "--json", *flags))["precision"]


def model_path(name):
    return os.path.join(ARGS.models, name)


def nodes_by_name(precision):
    return {node["name"]: node for node in precision["nodes"] if node["graph"] == "main"}


def folder_state(folder):
    state = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            stat = os.stat(path)
            state[os.path.relpath(path, folder)] = (stat.st_size, stat.st_mtime_ns)
    return state


def gemm_model(path, k, n):
    """x[batch, k] @ w[k, n] + b: one float32 Gemm."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")
    bias = numpy_helper.from_array(np.zeros(n, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="gemm")], "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])], [weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


class TransformerPolicyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = model_path("transformer_block.onnx")
        cls.precision = inspect_json(cls.model, "--policy", "mixed_float16")
        cls.nodes = nodes_by_name(cls.precision)

    def test_matmuls_are_float16_with_allow_reason(self):
        matmuls = [node for node in self.precision["nodes"] if node["op"] == "MatMul"]
        self.assertEqual(len(matmuls), 9)
        for node in matmuls:
            self.assertEqual(node["dtype"], "float16", node)
            self.assertEqual(node["class"], "allow", node)
            self.assertIn("allow", node["reason"], node)

    def test_output_softmax_is_float32(self):
        model = onnx.load(self.model)
        (softmax,) = [node for node in model.graph.node
                      if node.op_type == "Softmax" and node.output[0] in {o.name for o in model.graph.output}]
        self.assertEqual(self.nodes[softmax.name]["dtype"], "float")

    def test_layer_norm_follows_policy(self):
        # ops.def classes LayerNormalization infer under mixed_float16; user overrides pin it.
        for name in ("attn.norm", "ffn.norm"):
            self.assertEqual(self.nodes[name]["class"], "infer")
            self.assertIn(self.nodes[name]["dtype"], {"float16", "float"})
        pinned_fp32 = nodes_by_name(inspect_json(self.model, "--policy", "mixed_float16",
                                                 "--fp32-ops", "LayerNormalization"))
        pinned_low = nodes_by_name(inspect_json(self.model, "--policy", "mixed_float16",
                                                "--low-ops", "LayerNormalization"))
        by_regex = nodes_by_name(inspect_json(self.model, "--policy", "mixed_float16", "--fp32-nodes", "^ffn\\.norm$"))
        for name in ("attn.norm", "ffn.norm"):
            self.assertEqual(pinned_fp32[name]["dtype"], "float")
            self.assertEqual(pinned_fp32[name]["class"], "deny")
            self.assertIn("--fp32-ops", pinned_fp32[name]["reason"])
            self.assertEqual(pinned_low[name]["dtype"], "float16")
            self.assertEqual(pinned_low[name]["class"], "allow")
        self.assertEqual(by_regex["ffn.norm"]["dtype"], "float")
        self.assertEqual(by_regex["attn.norm"]["dtype"], self.nodes["attn.norm"]["dtype"])

    def test_casts_match_convert_report_and_file(self):
        with tempfile.TemporaryDirectory() as folder:
            output = os.path.join(folder, "out.onnx")
            report_path = os.path.join(folder, "report.json")
            run_cli("convert", self.model, "-o", output, "--policy", "mixed_float16", "--report", report_path)
            with open(report_path, encoding="utf-8") as f:
                report = json.load(f)
            original = onnx.load(self.model)
            converted = onnx.load(output)
        casts_added = (sum(node.op_type == "Cast" for node in converted.graph.node)
                       - sum(node.op_type == "Cast" for node in original.graph.node))
        self.assertGreater(casts_added, 0)
        self.assertEqual(self.precision["casts_inserted"], report["casts_inserted"])
        self.assertEqual(self.precision["casts_inserted"], casts_added)
        text = run_cli("inspect", self.model, "--policy", "mixed_float16")
        self.assertIn(f"Casts inserted: {casts_added}\n", text)
        # Every node decision agrees with the converter's own report.
        self.assertEqual([(n["name"], n["dtype"], n["reason"]) for n in self.precision["nodes"]],
                         [(n["name"], n["dtype"], n["reason"]) for n in report["nodes"]])
        self.assertEqual(self.precision["converted_nodes"], report["converted_nodes"])
        self.assertAlmostEqual(self.precision["percent_converted"],
                               100.0 * report["converted_nodes"] / report["float_nodes"])

    def test_json_keys(self):
        self.assertEqual(set(self.precision), PRECISION_KEYS)
        for node in self.precision["nodes"]:
            self.assertEqual(set(node), NODE_KEYS)
        for miss in self.precision["tensor_core"]:
            self.assertEqual(set(miss), MISS_KEYS)
            for dim in miss["dims"]:
                self.assertEqual(set(dim), DIM_KEYS)
        self.assertEqual(self.precision["policy"], "mixed_float16")
        self.assertEqual(self.precision["target"], "portable")
        self.assertEqual(self.precision["hardware"], "any")
        self.assertEqual(self.precision["unknown_ops"], [])
        # float16 needs no newer opset for any op of this model.
        self.assertEqual(self.precision["opset_change"]["action"], "kept")
        self.assertEqual(self.precision["opset_change"]["needs"], [])

    def test_without_policy_inspect_is_unchanged(self):
        summary = json.loads(run_cli("inspect", self.model, "--json"))
        self.assertNotIn("precision", summary)
        self.assertNotIn("Casts inserted", run_cli("inspect", self.model))

    def test_writes_nothing(self):
        with tempfile.TemporaryDirectory() as folder:
            copy = os.path.join(folder, "model.onnx")
            shutil.copy(self.model, copy)
            before = folder_state(folder)
            run_cli("inspect", copy, "--policy", "mixed_float16", cwd=folder)
            run_cli("inspect", copy, "--policy", "mixed_bfloat16", "--json", cwd=folder)
            self.assertEqual(folder_state(folder), before)


class TensorCoreTest(unittest.TestCase):
    def test_mlp_flags_only_the_n10_gemm(self):
        precision = inspect_json(model_path("mlp_u64.onnx"), "--policy", "mixed_float16")
        gemms = {node["name"]: node for node in precision["nodes"] if node["op"] == "Gemm"}
        self.assertTrue(all(node["dtype"] == "float16" for node in gemms.values()), gemms)
        misses = precision["tensor_core"]
        self.assertEqual([miss["node"] for miss in misses], ["dense3"])
        dims = {dim["name"]: dim for dim in misses[0]["dims"]}
        self.assertEqual(dims["N"], {"name": "N", "value": 10, "multiple_of_8": False})
        self.assertEqual(dims["K"], {"name": "K", "value": 64, "multiple_of_8": True})
        text = run_cli("inspect", model_path("mlp_u64.onnx"), "--policy", "mixed_float16")
        self.assertRegex(text, r"dense3 \(Gemm, float16\): N=10 \(miss\), K=64\n")
        self.assertNotRegex(text, r"dense[12] \(Gemm")

    def test_mlp_in_float32_flags_nothing(self):
        # The rule concerns low-precision GEMMs only.
        precision = inspect_json(model_path("mlp_u64.onnx"), "--policy", "float32")
        self.assertEqual(precision["tensor_core"], [])
        self.assertEqual(precision["casts_inserted"], 0)

    def test_gemm_with_k30_is_flagged(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "gemm.onnx")
            gemm_model(path, k=30, n=16)
            misses = inspect_json(path, "--policy", "float16")["tensor_core"]
            aligned = os.path.join(folder, "aligned.onnx")
            gemm_model(aligned, k=32, n=16)
            aligned_misses = inspect_json(aligned, "--policy", "float16")["tensor_core"]
        self.assertEqual(len(misses), 1)
        self.assertEqual(misses[0]["node"], "gemm")
        dims = {dim["name"]: dim for dim in misses[0]["dims"]}
        self.assertEqual(dims["K"], {"name": "K", "value": 30, "multiple_of_8": False})
        self.assertEqual(dims["N"], {"name": "N", "value": 16, "multiple_of_8": True})
        self.assertEqual(aligned_misses, [])

    def test_symbolic_dims_are_unknown(self):
        # attn.scores multiplies [batch, heads, seq, d] by [batch, heads, d, seq]: N is symbolic.
        precision = inspect_json(model_path("transformer_block.onnx"), "--policy", "mixed_float16")
        misses = {miss["node"]: miss for miss in precision["tensor_core"]}
        self.assertIn("attn.scores", misses)
        dims = {dim["name"]: dim for dim in misses["attn.scores"]["dims"]}
        self.assertIsNone(dims["N"]["value"])
        self.assertFalse(dims["N"]["multiple_of_8"])
        self.assertNotIn("attn.q.matmul", misses)  # 64x64 weights


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    ARGS.cli = os.path.abspath(ARGS.cli)  # some tests run it from another folder
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
