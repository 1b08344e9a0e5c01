"""End-to-end tests of `onnx-amp run`: the bundled models, and their mixed_float16
conversions, match ONNX Runtime; --stats shows buffer reuse on the guide's MLP; --repeat
times the runs after the first.

usage: run_cli_test.py --cli ONNX_AMP --models MODELS_DIR
"""
import argparse
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ARGS = None
BATCH = 8
FLOAT32_U = 2.0 ** -24
FLOAT16_U = 2.0 ** -11


def run_cli(*args):
    result = subprocess.run([ARGS.cli, *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"onnx-amp {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result.stdout


def make_feeds(model_path, rng):
    """Random inputs from the declared types; token ids in [0, 1000), masks in {0, 1}."""
    feeds = {}
    for value in onnx.load(model_path, load_external_data=False).graph.input:
        dims = [d.dim_value if d.HasField("dim_value") else BATCH for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[value.name] = rng.integers(0, 1000, size=dims, dtype=np.int64)
        elif value.name == "mask":
            feeds[value.name] = (rng.random(dims) > 0.2).astype(np.float32)
        else:
            feeds[value.name] = rng.uniform(-1.0, 1.0, size=dims).astype(np.float32)
    return feeds


def run_both(model_path, feeds, folder):
    inputs = Path(folder) / "inputs.npz"
    outputs = Path(folder) / "outputs.npz"
    np.savez(inputs, **feeds)
    run_cli("run", model_path, "--inputs", inputs, "-o", outputs)
    ours = dict(np.load(outputs))
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    theirs = dict(zip(names, session.run(None, feeds)))
    return ours, theirs


def assert_close(test, ours, theirs, rtol):
    """|ours - theirs| <= rtol * max|theirs| elementwise: both runtimes compute the same
    graph; only summation order (and, for float16 ops, when intermediates are rounded)
    differ."""
    test.assertEqual(sorted(ours), sorted(theirs))
    for name, expected in theirs.items():
        actual = ours[name]
        test.assertEqual(actual.shape, expected.shape, name)
        expected = expected.astype(np.float64)
        scale = np.max(np.abs(expected))
        error = np.max(np.abs(actual.astype(np.float64) - expected))
        test.assertLessEqual(error, rtol * scale, f"{name}: max error {error:.3g} vs scale {scale:.3g}")


class RunMatchesOnnxRuntime(unittest.TestCase):
    def models(self):
        paths = sorted(Path(ARGS.models).glob("*.onnx"))
        self.assertTrue(paths, "no bundled models found")
        return paths

    def test_bundled_models_float32(self):
        rng = np.random.default_rng(0)
        for path in self.models():
            with self.subTest(model=path.name), tempfile.TemporaryDirectory() as folder:
                ours, theirs = run_both(path, make_feeds(path, rng), folder)
                # float32 dot products of length K differ by at most ~K*u in summation
                # order; the largest K in these models is 1568 (CNN head).
                assert_close(self, ours, theirs, rtol=2 * 1568 * FLOAT32_U)

    def test_converted_models_mixed_float16(self):
        rng = np.random.default_rng(1)
        for path in self.models():
            with self.subTest(model=path.name), tempfile.TemporaryDirectory() as folder:
                mixed = Path(folder) / "mixed.onnx"
                run_cli("convert", path, "-o", mixed, "--policy", "mixed_float16")
                ours, theirs = run_both(mixed, make_feeds(path, rng), folder)
                # Same float16 graph in both; a runtime may round a float16 result where
                # the other keeps float32 for a moment: allow a few float16 roundings
                # along the depth of the deepest model (about 40 nodes).
                assert_close(self, ours, theirs, rtol=2 * 40 * FLOAT16_U)


class RunStats(unittest.TestCase):
    def test_guide_mlp_reuses_buffers(self):
        with tempfile.TemporaryDirectory() as folder:
            model = Path(folder) / "mlp_u4096.onnx"
            subprocess.run([sys.executable, str(Path(ARGS.models) / "make_mlp.py"), "--units", "4096",
                            "-o", str(model)], check=True, capture_output=True)
            # Node by node (--no-fuse), the intermediates are two [1024,4096] float32
            # activations per hidden layer (Gemm, Relu) plus the small head: 64 MiB in all;
            # buffer reuse keeps only about two of them live at once.
            peak, total = self.peak_and_total(run_cli("run", model, "--random", "--dim", "batch=1024",
                                                      "--stats", "--no-fuse"))
            self.assertGreater(total, 60.0)
            self.assertLess(peak, 0.6 * total)
            # Fused (the default), each hidden Gemm runs with its Relu as one step, so there
            # are half as many intermediates and no more live at once.
            stdout = run_cli("run", model, "--random", "--dim", "batch=1024", "--stats")
            self.assertRegex(stdout, r"Gemm\+Relu\s+2\s")
            fused_peak, fused_total = self.peak_and_total(stdout)
            self.assertLess(fused_total, 0.6 * total)
            self.assertLessEqual(fused_peak, peak)

    def peak_and_total(self, stdout):
        match = re.search(r"peak tensor memory: ([0-9.]+) MiB live at once, vs ([0-9.]+) MiB", stdout)
        self.assertIsNotNone(match, stdout)
        return float(match.group(1)), float(match.group(2))


class Repeat(unittest.TestCase):
    """--repeat N runs the model N times: the latency line covers runs 2-N, --stats
    shows calls and milliseconds per run averaged over them, and the outputs are the
    last run's, the same as one run's."""

    def test_cnn_latency_and_per_run_table(self):
        model = Path(ARGS.models) / "cnn.onnx"
        with tempfile.TemporaryDirectory() as folder:
            once, repeated = Path(folder) / "once.npz", Path(folder) / "repeated.npz"
            run_cli("run", model, "--random", "--dim", "batch=4", "-o", once)
            stdout = run_cli("run", model, "--random", "--dim", "batch=4", "--repeat", "5", "--stats", "-o", repeated)
            first, last = np.load(once), np.load(repeated)
            for name in first.files:
                np.testing.assert_array_equal(first[name], last[name])
        self.assertIn("time per op type, per run (runs 2-5):", stdout)
        # The CNN has two convolutions, each with its batch norm fused in: the first layer
        # with its Relu and max pool too, the second's Relu read by the max pool after it.
        self.assertRegex(stdout, r"\nConv\+BatchNormalization\+Relu\+MaxPool\s+1\s+[0-9.]+\s")
        self.assertRegex(stdout, r"\nConv\+BatchNormalization\s+1\s+[0-9.]+\s")
        self.assertRegex(stdout, r"\nRelu\+MaxPool\s+1\s+[0-9.]+\s")
        self.assertIn("per run over 4 runs:", stdout)
        match = re.search(r"latency over runs 2-5 \(the first builds the kernels\): median ([0-9.]+) ms, "
                          r"min ([0-9.]+) ms, max ([0-9.]+) ms", stdout)
        self.assertIsNotNone(match, stdout)
        median, low, high = map(float, match.groups())
        self.assertTrue(0 < low <= median <= high, stdout)

    def test_bad_repeat_is_a_usage_error(self):
        model = Path(ARGS.models) / "cnn.onnx"
        result = subprocess.run([ARGS.cli, "run", str(model), "--random", "--dim", "batch=1", "--repeat", "0"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--repeat", result.stderr)


class MaxMemory(unittest.TestCase):
    """--max-memory caps what a run allocates for node outputs: past it the command fails
    (exit 1) naming the node and output; a malformed size is a usage error (exit 2)."""

    def cli(self, *args):
        return subprocess.run([ARGS.cli, *map(str, args)], capture_output=True, text=True)

    def test_run_and_validate_respect_the_cap(self):
        model = Path(ARGS.models) / "mlp_u64.onnx"
        # The first hidden layer alone is a [256, 64] float32 output: 64 KiB.
        for command in (["run", model, "--random"], ["validate", model, "--policy", "mixed_float16", "--random"]):
            capped = self.cli(*command, "--dim", "batch=256", "--max-memory", "32K")
            self.assertEqual(capped.returncode, 1, capped.stderr)
            self.assertRegex(capped.stderr, r"node '[^']+' \(\w+\): output '[^']+' \[256,64\] needs 65536 bytes more")
            self.assertIn("memory cap is 32768 bytes (--max-memory)", capped.stderr)
            roomy = self.cli(*command, "--dim", "batch=256", "--max-memory", "64M")
            self.assertEqual(roomy.returncode, 0, roomy.stderr)
        bad = self.cli("run", model, "--random", "--dim", "batch=2", "--max-memory", "12 MB")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--max-memory '12 MB'", bad.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
