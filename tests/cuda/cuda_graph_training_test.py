"""onnx-amp train --device cuda with the steady step captured in a CUDA graph against the
same run with --no-cuda-graph: the guide's MLP, mixed_bfloat16, RMSprop, 40 steps at
batch 256, 9 steps an epoch, with an evaluation after each epoch and a checkpoint every
10 steps between the replays (the checkpoint takes the weights to the host and back, so
the replay after it must copy them to the captured addresses). Passes when the graph run
says it captured the step and every step's loss and the exported float32 weights match
the eager run's. Exits 77 (skipped) when no GPU is visible.

Tolerance: both runs launch the same kernels with the same cuBLASLt algorithms on the
same inputs, so they agree bit for bit but for the order of float atomics; 1e-5 relative
(about 2^-17) is far below what a replay reading a stale batch, learning rate or loss
scale would produce (the loss of a stale batch differs in the first digit)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

SKIPPED = 77
RTOL = 1e-5
ATOL = 1e-6


def train(cli, model, data, tmp, name, extra):
    metrics = os.path.join(tmp, name + ".jsonl")
    export = os.path.join(tmp, name + ".onnx")
    command = [cli, "train", model, "--data", data, "--device", "cuda", "--policy", "mixed_bfloat16",
               "--optimizer", "rmsprop", "--batch-size", "256", "--train-limit", "2500", "--eval-limit", "256",
               "--max-steps", "40", "--seed", "3", "--metrics", metrics, "--export", export,
               "--checkpoint-dir", os.path.join(tmp, name + "_checkpoints"), "--checkpoint-every", "10"] + extra
    run = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{name}: exit {run.returncode}: {run.stderr[-2000:]}")
    with open(metrics) as f:
        steps = [json.loads(line) for line in f if '"step"' in line and '"epoch"' not in line]
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(export).graph.initializer}
    return run.stderr, steps, weights


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    model = os.path.join(args.models, "mlp_u64.onnx")
    probe = subprocess.run([args.cli, "train", model, "--data", args.data, "--device", "cuda", "--max-steps", "1",
                            "--train-limit", "64", "--eval-limit", "64"], capture_output=True, text=True)
    if probe.returncode != 0 and "--device cuda" in probe.stderr:
        print(f"skipped: {probe.stderr.strip()}")
        return SKIPPED
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        graph_log, graph_steps, graph_weights = train(args.cli, model, args.data, tmp, "graph", [])
        _, eager_steps, eager_weights = train(args.cli, model, args.data, tmp, "eager", ["--no-cuda-graph"])
    if "captured and replayed" not in graph_log:
        failures.append("the graph run did not say it captured the step: " + graph_log[-1000:])
    notes = [s["note"] for s in graph_steps if "note" in s]
    print("notes in the metrics:", notes)
    if len(graph_steps) != len(eager_steps):
        failures.append(f"{len(graph_steps)} steps against {len(eager_steps)}")
    for g, e in zip(graph_steps, eager_steps):
        if not np.isclose(g["loss"], e["loss"], rtol=RTOL, atol=ATOL) or g["skipped"] != e["skipped"]:
            failures.append(f"step {g['step']}: loss {g['loss']} (graph) vs {e['loss']} (eager)")
    bitwise = True
    for name, eager in eager_weights.items():
        graph = graph_weights[name]
        bitwise &= graph.tobytes() == eager.tobytes()
        if not np.allclose(graph, eager, rtol=RTOL, atol=ATOL):
            failures.append(f"weight {name}: max difference {np.max(np.abs(graph - eager))}")
    print(f"{len(graph_steps)} steps; weights {'bit-identical' if bitwise else 'within tolerance'}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
