"""End-to-end tests of `onnx-amp validate` and `onnx-amp convert --auto`.

- planted_overflow.onnx (make_validation_models.py): validate fails (exit 1) and names
  the scaling Mul as the first divergence; convert --auto repairs it by forcing at most
  that node and its immediate neighbours to float32, within 2*log2(N)+2 validation runs.
- layernorm_overflow.onnx: pure float16 fails at the squared deviations; mixed_float16
  passes.
- every bundled model passes under mixed_float16 and mixed_bfloat16 with the derived
  tolerances on several random samples.
- the JSON reports have exactly their documented keys and types.
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

CLI = None
MODELS = None
WORK = None
HERE = os.path.dirname(os.path.abspath(__file__))

NUM = (int, float)
NUM_OR_STR = (int, float, str)  # "inf"/"nan" are strings


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)


def planted(name):
    return os.path.join(WORK, name)


# Extra flags per bundled model for --random: sequence length, token ids over the whole
# vocabulary and a 0/1 attention mask.
MODEL_FLAGS = {
    "transformer_block": ["--dim", "seq=16", "--int-range", "tokens=0,1000", "--int-range", "mask=0,2"],
}

TENSOR_KEYS = {
    "name": str, "producer": str, "op_type": str, "reference_dtype": str, "mixed_dtype": str, "passed": bool,
    "rtol": NUM_OR_STR, "atol": NUM_OR_STR, "worst_sample": int, "count": int, "violations": int,
    "worst_index": int, "max_abs_error": NUM_OR_STR, "max_rel_error": NUM_OR_STR, "mean_rel_error": NUM_OR_STR,
    "rel_l2_error": NUM_OR_STR, "cosine_similarity": NUM_OR_STR, "reference_non_finite": int,
    "mixed_non_finite": int, "reference_max_abs": NUM_OR_STR, "mixed_max_abs": NUM_OR_STR,
    "float16_headroom": NUM_OR_STR, "reference_range": list, "mixed_range": list,
    "top1_agreement": (type(None), int, float), "top5_agreement": (type(None), int, float),
}
REPORT_KEYS = {"schema": str, "passed": bool, "samples": int, "outputs": list, "intermediates": list,
               "first_divergence": (type(None), dict)}
DIVERGENCE_KEYS = {"node": str, "op_type": str, "dtype": str, "value": str, "non_finite": bool, "sample": int,
                   "inputs": list}
DIVERGENCE_INPUT_KEYS = {"name": str, "max_abs_error": (type(None),) + NUM_OR_STR,
                         "rel_l2_error": (type(None),) + NUM_OR_STR, "reference_range": (type(None), list),
                         "mixed_range": (type(None), list)}
AUTO_KEYS = {"schema": str, "passed": bool, "validation_runs": int, "rounds": int, "regions_searched": int,
             "nodes_searched": int, "forced": list, "validation": dict}
FORCED_KEYS = {"node": str, "op_type": str, "stage": str, "value": str, "magnitude": NUM_OR_STR,
               "non_finite": bool, "reason": str}


class Schema(unittest.TestCase):
    def assert_keys(self, obj, spec, where):
        self.assertEqual(set(obj), set(spec), where)
        for key, kind in spec.items():
            self.assertIsInstance(obj[key], kind, f"{where}.{key}")
            self.assertFalse(isinstance(obj[key], bool) and kind in (NUM, NUM_OR_STR, int), f"{where}.{key}")

    def assert_validation_schema(self, report):
        self.assert_keys(report, REPORT_KEYS, "report")
        self.assertEqual(report["schema"], "onnx-amp.validation/1")
        for t in report["outputs"] + report["intermediates"]:
            self.assert_keys(t, TENSOR_KEYS, "tensor " + t.get("name", "?"))
            for key in ("reference_range", "mixed_range"):
                self.assertEqual(len(t[key]), 2)
        if report["first_divergence"] is not None:
            d = report["first_divergence"]
            self.assert_keys(d, DIVERGENCE_KEYS, "first_divergence")
            for i in d["inputs"]:
                self.assert_keys(i, DIVERGENCE_INPUT_KEYS, "first_divergence.inputs")


class PlantedOverflow(Schema):
    def test_validate_names_the_scaling_mul(self):
        report_path = planted("overflow_report.json")
        out = run("validate", planted("planted_overflow.onnx"), "--policy", "mixed_float16", "--random",
                  "--samples", "4", "--dim", "batch=3", "--per-node", "--report", report_path)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("scale_up", out.stderr)
        self.assertIn("first divergence", out.stdout)
        with open(report_path) as f:
            report = json.load(f)
        self.assert_validation_schema(report)
        self.assertFalse(report["passed"])
        self.assertEqual(report["samples"], 4)
        d = report["first_divergence"]
        self.assertEqual(d["node"], "scale_up")
        self.assertEqual(d["op_type"], "Mul")
        self.assertEqual(d["dtype"], "float16")
        self.assertTrue(d["non_finite"])
        self.assertEqual([i["name"] for i in d["inputs"]], ["h1", "up"])
        self.assertTrue(report["intermediates"], "--per-node lists the intermediate values")
        self.assertEqual(report["outputs"][0]["name"], "y")
        self.assertFalse(report["outputs"][0]["passed"])

    def test_auto_convert_repairs_it(self):
        out_model = planted("planted_auto.onnx")
        search_path = planted("planted_search.json")
        out = run("convert", planted("planted_overflow.onnx"), "-o", out_model, "--policy", "mixed_float16", "--auto",
                  "--random", "--samples", "4", "--dim", "batch=3", "--search-report", search_path)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        with open(search_path) as f:
            search = json.load(f)
        self.assert_keys(search, AUTO_KEYS, "auto report")
        self.assertEqual(search["schema"], "onnx-amp.auto-convert/1")
        self.assert_validation_schema(search["validation"])
        for forced in search["forced"]:
            self.assert_keys(forced, FORCED_KEYS, "forced")
            self.assertIn(forced["stage"], ("range-screen", "search"))
        self.assertTrue(search["passed"])
        forced = {f["node"] for f in search["forced"]}
        self.assertIn("scale_up", forced)
        self.assertLessEqual(forced, {"scale_up", "linear1_add", "linear2_matmul"})
        screened = [f for f in search["forced"] if f["stage"] == "range-screen"]
        self.assertEqual([f["node"] for f in screened], ["scale_up"])
        self.assertGreater(screened[0]["magnitude"], 65504)
        n = max(2, search["regions_searched"] + search["nodes_searched"])
        self.assertLessEqual(search["validation_runs"], 2 * math.log2(n) + 2, search)
        # The result validates on samples the search never saw.
        check = run("validate", planted("planted_overflow.onnx"), "--against", out_model, "--random", "--samples",
                    "4", "--seed", "99", "--dim", "batch=5")
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


class DecomposedLayerNorm(unittest.TestCase):
    def test_float16_fails_at_the_squares(self):
        out = run("validate", planted("layernorm_overflow.onnx"), "--policy", "float16", "--random", "--samples",
                  "2")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("'sq'", out.stderr)
        self.assertIn("node 'square'", out.stderr)

    def test_mixed_float16_passes(self):
        out = run("validate", planted("layernorm_overflow.onnx"), "--policy", "mixed_float16", "--random",
                  "--samples", "2")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


class BundledModels(Schema):
    def test_every_model_passes_both_mixed_policies(self):
        models = sorted(glob.glob(os.path.join(MODELS, "*.onnx")))
        self.assertTrue(models)
        for path in models:
            name = os.path.splitext(os.path.basename(path))[0]
            for policy in ("mixed_float16", "mixed_bfloat16"):
                with self.subTest(model=name, policy=policy):
                    report_path = os.path.join(WORK, f"{name}_{policy}.json")
                    out = run("validate", path, "--policy", policy, "--random", "--samples", "3", "--seed", "11",
                              "--dim", "batch=2", "--report", report_path, *MODEL_FLAGS.get(name, []))
                    self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                    with open(report_path) as f:
                        report = json.load(f)
                    self.assert_validation_schema(report)
                    self.assertTrue(report["passed"])
                    self.assertEqual(report["intermediates"], [])


class Errors(unittest.TestCase):
    def test_usage_errors(self):
        model = planted("planted_overflow.onnx")
        self.assertEqual(run("validate", model, "--random").returncode, 2)  # neither --policy nor --against
        out = run("validate", model, "--policy", "mixed_float16", "--dim", "batch=1")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--random", out.stderr)
        out = run("validate", model, "--policy", "mixed_float16", "--random", "--dim", "batch=1", "--tolerance",
                  "nope=1,1")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("nope", out.stderr)
        self.assertEqual(run("convert", model, "-o", planted("x.onnx"), "--random").returncode, 2)  # needs --auto


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    args, rest = parser.parse_known_args()
    CLI, MODELS = args.cli, args.models
    with tempfile.TemporaryDirectory() as tmp:
        WORK = tmp
        subprocess.run([sys.executable, os.path.join(HERE, "make_validation_models.py"), tmp], check=True)
        result = unittest.main(argv=[sys.argv[0]] + rest, exit=False)
    sys.exit(0 if result.result.wasSuccessful() else 1)
