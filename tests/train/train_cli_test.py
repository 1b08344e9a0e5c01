"""`onnx-amp train` end to end on Fashion-MNIST with the guide's MLP and RMSprop: a short
float32 run beats 70% eval accuracy, mixed_float16 / mixed_bfloat16 runs land close to
it, and a run killed with SIGKILL then resumed ends with bit-identical weights."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import numpy_helper


def last_epoch(metrics):
    with open(metrics) as f:
        epochs = [json.loads(line) for line in f if '"epoch"' in line]
    return epochs[-1]


def weights(path):
    return {t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(path).graph.initializer}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    model = os.path.join(args.models, "mlp_u64.onnx")
    common = [args.cli, "train", model, "--data", args.data, "--optimizer", "rmsprop", "--batch-size", "32",
              "--train-limit", "8000", "--eval-limit", "2000", "--threads", "2", "--seed", "3"]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        accuracy = {}
        for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
            metrics = os.path.join(tmp, policy + ".jsonl")
            subprocess.run(common + ["--policy", policy, "--epochs", "1", "--metrics", metrics], check=True)
            summary = last_epoch(metrics)
            accuracy[policy] = summary["eval_accuracy"]
            with open(metrics) as f:
                steps = [json.loads(line) for line in f if '"step"' in line]
            if len(steps) != 8000 // 32 or any(set(s) != {"step", "loss", "scale", "skipped", "step_ms"} for s in steps):
                print(f"{policy}: metrics lines malformed or missing")
                failures += 1
            print(f"{policy}: eval accuracy {accuracy[policy]:.4f}, skipped {summary['skipped_steps']}")
        if accuracy["float32"] <= 0.70:
            print("float32 accuracy not above 70%")
            failures += 1
        for policy in ("mixed_float16", "mixed_bfloat16"):
            if abs(accuracy[policy] - accuracy["float32"]) > 0.03:
                print(f"{policy} accuracy {accuracy[policy]:.4f} is not within 3 points of float32")
                failures += 1

        # SIGKILL mid-run, then --resume: the final weights equal an uninterrupted run's.
        steps = ["--max-steps", "40", "--checkpoint-every", "10", "--policy", "mixed_float16"]
        full = os.path.join(tmp, "full.onnx")
        subprocess.run(common + steps + ["--checkpoint-dir", os.path.join(tmp, "ck_full"), "--export", full],
                       check=True, stdout=subprocess.DEVNULL)
        ck = os.path.join(tmp, "ck")
        metrics = os.path.join(tmp, "killed.jsonl")
        proc = subprocess.Popen(common + steps + ["--checkpoint-dir", ck, "--metrics", metrics],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if os.path.exists(metrics):
                with open(metrics) as f:
                    if sum('"step"' in line for line in f) >= 15:
                        break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not os.path.exists(os.path.join(ck, "checkpoint.npz")):
            print("no checkpoint before the kill")
            return 1
        resumed = os.path.join(tmp, "resumed.onnx")
        subprocess.run(common + steps + ["--checkpoint-dir", ck, "--resume", "--export", resumed], check=True,
                       stdout=subprocess.DEVNULL)
        if weights(full) != weights(resumed):
            print("resumed weights differ from the uninterrupted run")
            failures += 1
        else:
            print("resume after SIGKILL: final weights bit-identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
