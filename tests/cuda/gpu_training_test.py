"""onnx-amp train --device cuda on Fashion-MNIST: the guide's MLP (U=64) and the bundled
CNN, under float32, mixed_float16 and mixed_bfloat16, seeds 0, 1, 2. Passes when each
mixed policy's mean final test accuracy is within 0.5 points of float32's, and the
float32 model exported after GPU training reaches, run on the CPU (onnx-amp run), the
accuracy the GPU run reported (within 0.5 points). Exits 77 (skipped) when no GPU is
visible."""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

SKIPPED = 77
SEEDS = (0, 1, 2)
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
MAX_GAP_POINTS = 0.5
# model file, epochs, batch size, the float32 accuracy a trained run reaches at least
MODELS = (("mlp_u64.onnx", 5, 256, 80.0), ("cnn.onnx", 2, 128, 80.0))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def train(cli, model, data, policy, seed, epochs, batch, tmp, export=None):
    metrics = os.path.join(tmp, f"{os.path.basename(model)}_{policy}_{seed}.jsonl")
    command = [cli, "train", model, "--data", data, "--device", "cuda", "--policy", policy, "--optimizer", "rmsprop",
               "--batch-size", str(batch), "--epochs", str(epochs), "--seed", str(seed), "--metrics", metrics]
    if export:
        command += ["--export", export]
    run = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{model} {policy} seed {seed}: exit {run.returncode}: {run.stderr[-2000:]}")
    with open(metrics) as f:
        epochs_seen = [json.loads(line) for line in f if '"epoch"' in line]
    return 100.0 * epochs_seen[-1]["eval_accuracy"]


def cpu_accuracy(cli, model, data, tmp):
    """Test accuracy of `model` run by onnx-amp on the CPU over the 10000 test images."""
    images = read_idx(os.path.join(data, "t10k-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
    labels = read_idx(os.path.join(data, "t10k-labels-idx1-ubyte.gz"))
    shape = (-1, 784) if "mlp" in os.path.basename(model) else (-1, 1, 28, 28)
    inputs = os.path.join(tmp, "t10k.npz")
    np.savez(inputs, x=images.reshape(shape))
    outputs = os.path.join(tmp, "predictions.npz")
    subprocess.run([cli, "run", model, "--inputs", inputs, "-o", outputs], check=True, stdout=subprocess.DEVNULL)
    with np.load(outputs) as result:
        scores = result[result.files[0]]
    return 100.0 * float(np.mean(np.argmax(scores, axis=1) == labels))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    probe = subprocess.run([args.cli, "train", os.path.join(args.models, "mlp_u64.onnx"), "--data", args.data,
                            "--device", "cuda", "--max-steps", "1", "--train-limit", "64", "--eval-limit", "64"],
                           capture_output=True, text=True)
    if probe.returncode != 0 and "--device cuda" in probe.stderr:
        print(f"skipped: {probe.stderr.strip()}")
        return SKIPPED
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, epochs, batch, floor in MODELS:
            model = os.path.join(args.models, name)
            accuracy = {}
            exported = os.path.join(tmp, "exported_" + name)
            for policy in POLICIES:
                for seed in SEEDS:
                    export = exported if (policy, seed) == ("mixed_bfloat16", 0) else None
                    accuracy[(policy, seed)] = train(args.cli, model, args.data, policy, seed, epochs, batch, tmp,
                                                     export)
            print(f"{name}: {epochs} epochs, batch {batch}")
            means = {}
            for policy in POLICIES:
                values = [accuracy[(policy, seed)] for seed in SEEDS]
                means[policy] = statistics.mean(values)
                print(f"  {policy:<16}" + "".join(f"{v:>8.2f}" for v in values) + f"   mean {means[policy]:.2f}")
            if means["float32"] < floor:
                print(f"  float32 mean {means['float32']:.2f} < {floor}: did not train")
                failures += 1
            for policy in POLICIES[1:]:
                gap = means[policy] - means["float32"]
                ok = abs(gap) <= MAX_GAP_POINTS
                failures += not ok
                print(f"  {policy}: {gap:+.2f} points against float32 {'ok' if ok else 'FAIL'}")
            on_cpu = cpu_accuracy(args.cli, exported, args.data, tmp)
            on_gpu = accuracy[("mixed_bfloat16", 0)]
            ok = abs(on_cpu - on_gpu) <= MAX_GAP_POINTS
            failures += not ok
            print(f"  exported (mixed_bfloat16, seed 0) on the CPU: {on_cpu:.2f} vs {on_gpu:.2f} on the GPU "
                  f"{'ok' if ok else 'FAIL'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
