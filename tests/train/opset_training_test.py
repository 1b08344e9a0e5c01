"""`onnx-amp train` on models exported at older opsets: the guide's MLP (Gemm, and MatMul
+ Add as tf2onnx writes Keras' Dense) and the bundled CNN, generated at opsets 11 and 13
into the build folder, each trained for one epoch on a Fashion-MNIST subset and compared
with the same model at opset 17 (same weights, subset and seed):

- float32: the exported weights are bit-identical to opset 17's. At every opset the loss
  is the same ai.onnx_amp op and the model's gradient rules emit the same ops, only in
  their opset's form (axes as attributes instead of inputs), so the same float32 kernels
  run in the same order: there is nothing for a tolerance to absorb.
- mixed_float16: the eval accuracy is within 2 points of opset 17's. Before opset 15
  BatchNormalization cannot take float16 data with float32 parameters, so the converter
  keeps the CNN's normalisations float32 there and the roundings differ. On these subsets
  that moved the accuracy by 0.2 points (2 of 1000 samples); 2 points is below the
  3 points train_fashion_mnist allows between float32 and a mixed policy, the size of
  the rounding noise of a one-epoch subset run.
"""
import argparse
import json
import os
import subprocess
import sys

import onnx
from onnx import numpy_helper

OPSETS = (11, 13)
REFERENCE_OPSET = 17
POLICIES = ("float32", "mixed_float16")
MIXED_TOLERANCE = 0.02
# name: (generator and its flags, training flags)
MODELS = {
    "mlp": (["make_mlp.py"], ["--batch-size", "32", "--train-limit", "2000"]),
    "mlp_matmul": (["make_mlp.py", "--dense", "matmul"], ["--batch-size", "32", "--train-limit", "2000"]),
    "cnn": (["make_cnn.py"], ["--batch-size", "64", "--train-limit", "1024"]),
}


def generate(models_dir, work, name, generator, opset):
    path = os.path.join(work, f"{name}_opset{opset}.onnx")
    subprocess.run([sys.executable, os.path.join(models_dir, generator[0]), *generator[1:], "--opset", str(opset),
                    "-o", path], check=True)
    declared = {entry.domain: entry.version for entry in onnx.load(path).opset_import}
    if declared.get("") != opset:
        raise RuntimeError(f"{path} declares opset {declared}, expected {opset}")
    return path


def train(args, model, flags, policy, work):
    """Eval accuracy and exported weights of one epoch."""
    stem = os.path.join(work, f"{os.path.basename(model)[:-5]}_{policy}")
    subprocess.run([args.cli, "train", model, "--data", args.data, "--policy", policy, "--optimizer", "rmsprop",
                    "--eval-limit", "1000", "--epochs", "1", "--seed", "3", "--threads", "2", *flags,
                    "--metrics", stem + ".jsonl", "--export", stem + ".trained.onnx"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(stem + ".jsonl") as f:
        accuracy = [json.loads(line) for line in f if '"epoch"' in line][-1]["eval_accuracy"]
    weights = {t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(stem + ".trained.onnx").graph.initializer}
    return accuracy, weights


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True, help="the generators' folder")
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True, help="folder for the generated models and runs")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failures = 0
    for name, (generator, flags) in MODELS.items():
        paths = {opset: generate(args.models, args.work, name, generator, opset)
                 for opset in (REFERENCE_OPSET, *OPSETS)}
        for policy in POLICIES:
            reference_accuracy, reference_weights = train(args, paths[REFERENCE_OPSET], flags, policy, args.work)
            for opset in OPSETS:
                accuracy, weights = train(args, paths[opset], flags, policy, args.work)
                if policy == "float32":
                    ok = weights == reference_weights
                    verdict = "weights bit-identical" if ok else "weights differ"
                else:
                    ok = abs(accuracy - reference_accuracy) <= MIXED_TOLERANCE
                    verdict = f"within {100 * MIXED_TOLERANCE:.0f} points" if ok else "too far"
                print(f"{name} {policy} opset {opset}: eval accuracy {accuracy:.4f}, opset {REFERENCE_OPSET} "
                      f"{reference_accuracy:.4f}: {verdict}")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
