"""`onnx-amp train` end to end on Fashion-MNIST with the guide's MLP and RMSprop: a short
float32 run beats 70% eval accuracy, mixed_float16 / mixed_bfloat16 runs land close to
it, the exported model gives the printed accuracy in `onnx-amp run` and in ONNX Runtime,
the CNN trains in mixed_float16 and mixed_bfloat16 too, --stats times its op types per
step, a run killed with SIGKILL then resumed ends with bit-identical weights, and
--weight-copies trains the same weights as a run without it."""
import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

EVAL_LIMIT = 2000


def last_epoch(metrics):
    with open(metrics) as f:
        epochs = [json.loads(line) for line in f if '"epoch"' in line]
    return epochs[-1]


def weights(path):
    return {t.name: numpy_helper.to_array(t).tobytes() for t in onnx.load(path).graph.initializer}


def eval_set(data):
    """The first EVAL_LIMIT t10k images (flattened, /255) and labels, read with NumPy."""
    with gzip.open(os.path.join(data, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(data, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return images[:EVAL_LIMIT].astype(np.float32) / 255.0, labels[:EVAL_LIMIT].astype(np.int64)


def exported_accuracies(cli, model, data, tmp):
    """Accuracy of an exported MLP under onnx-amp run and under ONNX Runtime."""
    x, y = eval_set(data)
    inputs = os.path.join(tmp, "eval_inputs.npz")
    outputs = os.path.join(tmp, "eval_outputs.npz")
    np.savez(inputs, x=x)
    subprocess.run([cli, "run", model, "--inputs", inputs, "-o", outputs], check=True, stdout=subprocess.DEVNULL)
    ours = float(np.mean(np.argmax(np.load(outputs)["probs"], axis=1) == y))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    theirs = float(np.mean(np.argmax(session.run(None, {"x": x})[0], axis=1) == y))
    return ours, theirs


def check_step_stats(cli, cnn, data):
    """`--stats` prints each op type's calls and time per step over steps 2..N: the CNN's
    two convolutions, each with its gradient, and one RMSprop update per parameter."""
    graph = onnx.load(cnn).graph
    running_stats = {name for node in graph.node if node.op_type == "BatchNormalization" for name in node.input[3:5]}
    parameters = sum(1 for t in graph.initializer if t.data_type == onnx.TensorProto.FLOAT and t.name not in running_stats)
    out = subprocess.run([cli, "train", cnn, "--data", data, "--optimizer", "rmsprop", "--batch-size", "16",
                          "--train-limit", "512", "--eval-limit", "16", "--threads", "2", "--policy",
                          "mixed_bfloat16", "--max-steps", "5", "--stats"], check=True, capture_output=True,
                         text=True).stdout
    rows = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3].endswith("%") and fields[0] != "op":
            rows[fields[0]] = (float(fields[1]), float(fields[2]), float(fields[3][:-1]))
    problems = []
    if "steps 2-5" not in out or "per step over 4 steps" not in out:
        problems.append("the step range is not 2-5")
    expected_calls = {"Conv": 2, "ConvGrad": 2, "RmspropUpdate": parameters}
    for op, calls in expected_calls.items():
        if op not in rows or rows[op][0] != calls:
            problems.append(f"{op}: {rows.get(op)} where {calls} calls per step were expected")
    if any(ms < 0 for _, ms, _ in rows.values()) or abs(sum(share for *_, share in rows.values()) - 100.0) > 1.0:
        problems.append("times negative or shares not summing to 100%")
    one_step = subprocess.run([cli, "train", cnn, "--data", data, "--batch-size", "16", "--train-limit", "64",
                               "--eval-limit", "16", "--max-steps", "1", "--stats"], capture_output=True, text=True)
    if one_step.returncode != 0 or "not timed" not in one_step.stderr:
        problems.append(f"one step with --stats: exit {one_step.returncode}, stderr {one_step.stderr!r}")
    print("train --stats:", "; ".join(problems) if problems else f"{len(rows)} op types, as expected")
    if problems:
        print(out)
    return len(problems)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    model = os.path.join(args.models, "mlp_u64.onnx")
    common = [args.cli, "train", model, "--data", args.data, "--optimizer", "rmsprop", "--batch-size", "32",
              "--train-limit", "8000", "--eval-limit", str(EVAL_LIMIT), "--threads", "2", "--seed", "3"]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        accuracy = {}
        for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
            metrics = os.path.join(tmp, policy + ".jsonl")
            exported = os.path.join(tmp, policy + ".onnx")
            subprocess.run(common + ["--policy", policy, "--epochs", "1", "--metrics", metrics,
                                     "--export", exported], check=True)
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

        # The exported float32 model reproduces the printed accuracy (to one sample: the
        # trainer's own forward pass and these runtimes may sum in another order).
        ours, theirs = exported_accuracies(args.cli, os.path.join(tmp, "float32.onnx"), args.data, tmp)
        print(f"exported float32 model: onnx-amp run {ours:.4f}, ONNX Runtime {theirs:.4f}")
        for name, value in (("onnx-amp run", ours), ("ONNX Runtime", theirs)):
            if abs(value - accuracy["float32"]) > 1.0 / EVAL_LIMIT:
                print(f"{name} accuracy {value:.4f} differs from the printed {accuracy['float32']:.4f}")
                failures += 1

        # The CNN (Conv, BatchNormalization, MaxPool) trains in both mixed policies as in float32.
        cnn = os.path.join(args.models, "cnn.onnx")
        cnn_accuracy = {}
        for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
            metrics = os.path.join(tmp, "cnn_" + policy + ".jsonl")
            subprocess.run([args.cli, "train", cnn, "--data", args.data, "--optimizer", "rmsprop", "--batch-size",
                            "64", "--train-limit", "2000", "--eval-limit", "1000", "--threads", "2", "--seed", "3",
                            "--policy", policy, "--epochs", "1", "--metrics", metrics], check=True,
                           stdout=subprocess.DEVNULL)
            cnn_accuracy[policy] = last_epoch(metrics)["eval_accuracy"]
            print(f"cnn {policy}: eval accuracy {cnn_accuracy[policy]:.4f}")
        if cnn_accuracy["float32"] <= 0.5:
            print("the CNN did not train in float32")
            failures += 1
        for policy in ("mixed_float16", "mixed_bfloat16"):
            if abs(cnn_accuracy[policy] - cnn_accuracy["float32"]) > 0.03:
                print(f"the CNN in {policy} strayed more than 3 points from float32")
                failures += 1

        failures += check_step_stats(args.cli, cnn, args.data)

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

        # --weight-copies changes where the step's low-precision weights come from, not their
        # bits: the final weights equal a run without it, over micro-batches, and across a
        # --resume (the copies are made afresh from the loaded weights).
        for policy in ("mixed_bfloat16", "mixed_float16"):
            run = common + ["--accumulation-steps", "2", "--policy", policy]
            plain = os.path.join(tmp, f"plain_{policy}.onnx")
            subprocess.run(run + ["--max-steps", "20", "--export", plain], check=True, stdout=subprocess.DEVNULL)
            ck = os.path.join(tmp, f"ck_copies_{policy}")
            subprocess.run(run + ["--max-steps", "10", "--weight-copies", "--checkpoint-dir", ck,
                                  "--checkpoint-every", "10"], check=True, stdout=subprocess.DEVNULL)
            copies = os.path.join(tmp, f"copies_{policy}.onnx")
            subprocess.run(run + ["--max-steps", "20", "--weight-copies", "--checkpoint-dir", ck, "--resume",
                                  "--export", copies], check=True, stdout=subprocess.DEVNULL)
            if weights(plain) != weights(copies):
                print(f"{policy}: --weight-copies changed the trained weights")
                failures += 1
            else:
                print(f"{policy}: --weight-copies (with a resume) gives the same weights, bit for bit")
        # In float32 there is nothing to copy, and the run says so.
        plain = subprocess.run(common + ["--max-steps", "1", "--weight-copies"], check=True, capture_output=True,
                               text=True)
        if "--weight-copies changes nothing here" not in plain.stderr:
            print("float32 --weight-copies: no note that it changes nothing")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
