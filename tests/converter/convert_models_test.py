"""`onnx-amp convert` end to end: the bundled models under all five policies pass the
ONNX checker, keep their I/O, and run in ONNX Runtime close to float32; flag errors
name the flag.

Run: python convert_models_test.py --cli PATH/onnx-amp --models PATH/models
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort

from ort_emulation import emulate

ARGS = None
POLICIES = ["float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"]
# Unit roundoff of each policy's low dtype (2^-p, p significand bits).
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "mixed_float16": 2.0 ** -11,
                 "bfloat16": 2.0 ** -8, "mixed_bfloat16": 2.0 ** -8}


def run_cli(*arguments):
    return subprocess.run([ARGS.cli, *arguments], capture_output=True, text=True, timeout=300)


def bundled_models():
    return sorted(glob.glob(os.path.join(ARGS.models, "*.onnx")))


def make_feeds(model, rng):
    """Inputs for a model: normal floats, token ids below 1000, a 0/1 mask."""
    feeds = {}
    for value in model.graph.input:
        tensor_type = value.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else (3 if i == 0 else 16)
                 for i, d in enumerate(tensor_type.shape.dim)]
        if tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[value.name] = rng.integers(0, 1000, size=shape, dtype=np.int64)
        elif value.name == "mask":
            mask = np.ones(shape, dtype=np.float32)
            mask[..., -3:] = 0.0
            feeds[value.name] = mask
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def with_logits_output(model):
    """The model with its `logits` tensor as an extra output (every bundled model names it)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.output.append(onnx.helper.make_empty_tensor_value_info("logits"))
    return copy


def run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def io_signature(model):
    def sig(values):
        return [(v.name, v.type.tensor_type.elem_type) for v in values]
    return sig(model.graph.input), sig(model.graph.output)


class ConvertBundledModelsTest(unittest.TestCase):
    def test_every_policy_checks_and_runs_close_to_float32(self):
        models = bundled_models()
        self.assertTrue(models, "no bundled models in " + ARGS.models)
        rng = np.random.default_rng(7)
        with tempfile.TemporaryDirectory() as tmp:
            for model_path in models:
                original = onnx.load(model_path)
                feeds = make_feeds(original, rng)
                reference = run(with_logits_output(original), feeds)
                logit_scale = max(1.0, float(np.max(np.abs(reference["logits"]))))
                for policy in POLICIES:
                    with self.subTest(model=os.path.basename(model_path), policy=policy):
                        out = os.path.join(tmp, f"{policy}.onnx")
                        report_path = os.path.join(tmp, f"{policy}.json")
                        result = run_cli("convert", model_path, "-o", out, "--policy", policy,
                                         "--report", report_path)
                        self.assertEqual(result.returncode, 0, result.stderr)
                        converted = onnx.load(out)
                        onnx.checker.check_model(converted, full_check=True)
                        self.assertEqual(io_signature(converted), io_signature(original))
                        with open(report_path, encoding="utf-8") as f:
                            report = json.load(f)
                        self.assertEqual(report["policy"], policy)
                        casts = sum(1 for n in converted.graph.node
                                    if n.op_type == "Cast" and n.doc_string == "onnx-amp:cast")
                        self.assertEqual(casts, report["casts_inserted"])
                        low_nodes = report["converted_nodes"]
                        if policy == "float32":
                            self.assertEqual(low_nodes, 0)
                            self.assertEqual(converted.graph, original.graph)
                            continue
                        self.assertGreater(low_nodes, 0)
                        # Softmax on a kept output stays float32 under every policy.
                        softmax = [n for n in report["nodes"] if n["op"] == "Softmax" and n["name"] == "softmax"]
                        self.assertTrue(all(n["dtype"] == "float" for n in softmax), softmax)
                        runnable = emulate(converted) if "bfloat16" in policy else converted
                        got = run(runnable, feeds)
                        # Each of the L low nodes rounds its output once (relative error
                        # u); independent roundings add in quadrature, so the logits move
                        # by about sqrt(L) * u * max|logit|, and a Softmax moves a
                        # probability by at most half of that.
                        u = UNIT_ROUNDOFF[policy]
                        logit_tol = np.sqrt(low_nodes) * u * logit_scale
                        np.testing.assert_allclose(got["probs"], reference["probs"], rtol=0, atol=0.5 * logit_tol)
                        self.assertTrue(np.all(np.isfinite(got["probs"])))

    def test_bfloat16_conversion_is_schema_legal(self):
        """Every node the bf16 policies convert admits bfloat16 at the model opset."""
        with tempfile.TemporaryDirectory() as tmp:
            for model_path in bundled_models():
                out = os.path.join(tmp, "m.onnx")
                result = run_cli("convert", model_path, "-o", out, "--policy", "mixed_bfloat16")
                self.assertEqual(result.returncode, 0, result.stderr)
                converted = onnx.load(out)
                onnx.checker.check_model(converted, full_check=True)
                inferred = onnx.shape_inference.infer_shapes(converted, check_type=True, strict_mode=True)
                self.assertIsNotNone(inferred)

    def test_reconversion_is_idempotent(self):
        with tempfile.TemporaryDirectory() as tmp:
            for model_path in bundled_models():
                once = os.path.join(tmp, "once.onnx")
                twice = os.path.join(tmp, "twice.onnx")
                self.assertEqual(run_cli("convert", model_path, "-o", once).returncode, 0)
                result = run_cli("convert", once, "-o", twice)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(onnx.load(twice).graph, onnx.load(once).graph)

    def test_flag_errors_name_the_flag(self):
        model = bundled_models()[0]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.onnx")
            cases = [
                (["--policy", "half"], "--policy"),
                (["--fp32-nodes", "(unclosed"], "--fp32-nodes"),
                (["--target", "gpu"], "--target"),
                (["--fp32-ops", "Add", "--low-ops", "Add"], "--low-ops"),
            ]
            for extra, flag in cases:
                with self.subTest(flag=flag):
                    result = run_cli("convert", model, "-o", out, *extra)
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertIn(flag, result.stderr)
                    self.assertFalse(os.path.exists(out))
            policy_file = os.path.join(tmp, "policy.json")
            with open(policy_file, "w", encoding="utf-8") as f:
                json.dump({"policy": "mixed_float16", "keep_io_typez": True}, f)
            result = run_cli("convert", model, "-o", out, "--policy-file", policy_file)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn("keep_io_typez", result.stderr)
            self.assertIn(policy_file, result.stderr)
            result = run_cli("convert", model, "-o", out, "--keep-io-types", "--no-keep-io-types")
            self.assertEqual(result.returncode, 2)
            self.assertFalse(os.path.exists(out))

    def test_policy_file_and_flags(self):
        model = bundled_models()[0]
        with tempfile.TemporaryDirectory() as tmp:
            policy_file = os.path.join(tmp, "policy.json")
            with open(policy_file, "w", encoding="utf-8") as f:
                json.dump({"policy": "float16", "keep_io_types": False, "hardware": "cpu-no-bf16"}, f)
            out = os.path.join(tmp, "out.onnx")
            report_path = os.path.join(tmp, "r.json")
            # The flag overrides the file's policy; the file's keep_io_types and hardware stay.
            result = run_cli("convert", model, "-o", out, "--policy-file", policy_file,
                             "--policy", "mixed_float16", "--report", report_path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(report_path, encoding="utf-8") as f:
                report = json.load(f)
            self.assertEqual(report["policy"], "mixed_float16")
            self.assertEqual(report["hardware"], "cpu-no-bf16")
            converted = onnx.load(out)
            self.assertEqual(converted.graph.input[0].type.tensor_type.elem_type, onnx.TensorProto.FLOAT16)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
