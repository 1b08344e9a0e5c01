"""Independent check of a model that SaveModel wrote with external data.

usage: check_saved_model.py MODEL EXPECTED_DIR

The onnx package loads MODEL with its external data and its checker validates the
locations; the weights must equal EXPECTED_DIR/<name>.bin (written by
make_test_models.py); ONNX Runtime runs the model and Y must equal X @ W + B.
Exits non-zero with a message on any mismatch.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main():
    model_path, expected_dir = sys.argv[1], sys.argv[2]
    onnx.checker.check_model(model_path, full_check=True)
    model = onnx.load(model_path)
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for name in ("W", "B"):
        expected = np.fromfile(os.path.join(expected_dir, name + ".bin"), dtype="<f4")
        if not np.array_equal(weights[name].ravel(), expected):
            sys.exit(f"{name} differs from {expected_dir}/{name}.bin")

    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(7).standard_normal((4, 256)).astype(np.float32)
    y, z = session.run(None, {"X": x, "cond": np.array(True)})
    w, b = weights["W"], weights["B"]
    reference = x.astype(np.float64) @ w.astype(np.float64) + b
    # float32 dot products of length n: |error| <= n * u * (|x| @ |w|) + u * |b|, u = 2^-24.
    bound = 256 * 2.0**-24 * (np.abs(x) @ np.abs(w)) + 2.0**-24 * np.abs(b)
    if np.any(np.abs(y - reference) > bound):
        sys.exit(f"Y differs from X @ W + B by up to {np.max(np.abs(y - reference))}")
    branch = np.fromfile(os.path.join(expected_dir, "branch_value.bin"), dtype="<f4")
    if not np.array_equal(z, branch):
        sys.exit("the If branch constant differs")
    print("ok")


if __name__ == "__main__":
    main()
