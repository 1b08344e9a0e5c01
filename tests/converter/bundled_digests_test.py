"""`onnx-amp convert` writes the same bytes as when bundled_digests.json was committed:
each bundled model (models/*.onnx) under each of the five policies, its SHA-256
compared with the committed one. A refactoring of the converter must keep them; a
deliberate change of the output rewrites the file with --update and says why in its
commit.

Run: python bundled_digests_test.py --cli PATH/onnx-amp --models PATH/models [--update]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None
POLICIES = ["float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"]
DIGESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bundled_digests.json")


def output_digests():
    """{"model.onnx policy": sha256 of the converted model's bytes} for every case."""
    digests = {}
    models = sorted(name for name in os.listdir(ARGS.models) if name.endswith(".onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for policy in POLICIES:
                out = os.path.join(tmp, f"{model}.{policy}.onnx")
                result = subprocess.run([ARGS.cli, "convert", os.path.join(ARGS.models, model), "-o", out,
                                         "--policy", policy, "--no-sync"], capture_output=True, text=True, timeout=300)
                if result.returncode != 0:
                    raise AssertionError(f"convert {model} --policy {policy} failed: {result.stderr}")
                if os.path.exists(out + ".data"):
                    raise AssertionError(f"{model} --policy {policy} wrote external data; digest it too")
                with open(out, "rb") as f:
                    digests[f"{model} {policy}"] = hashlib.sha256(f.read()).hexdigest()
    return digests


class BundledDigestsTest(unittest.TestCase):
    def test_converted_bytes_match_the_committed_digests(self):
        with open(DIGESTS, encoding="utf-8") as f:
            committed = json.load(f)
        got = output_digests()
        self.assertEqual(sorted(got), sorted(committed), "the cases differ from the committed ones")
        changed = [case for case in sorted(got) if got[case] != committed[case]]
        self.assertEqual(changed, [], "converted bytes changed; if deliberate, rerun with --update")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--update", action="store_true", help="rewrite bundled_digests.json from this build")
    ARGS, rest = parser.parse_known_args()
    if ARGS.update:
        with open(DIGESTS, "w", encoding="utf-8") as f:
            json.dump(output_digests(), f, indent=1, sort_keys=True)
            f.write("\n")
        sys.exit(0)
    unittest.main(argv=[sys.argv[0], *rest])
