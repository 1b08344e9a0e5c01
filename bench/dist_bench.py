"""Data-parallel scaling of `onnx-amp train` on one machine: samples/s with 1 rank and with
`mpirun -np 2` at the same global batch, and what each step all-reduces.

    dist_bench.py --cli BUILD/bin/onnx-amp --model MLP.onnx --data FASHION_MNIST_DIR
                  [--batch 256] [--steps 300] [--policies float32,mixed_float16,mixed_bfloat16]

For each policy: a plain run with --batch-size B and a 2-rank run with --batch-size B/2
(the same B samples per step), each with --threads 1 per rank so the two ranks use the two
cores one run of 1 rank at 2 threads would use; and a 1-rank run at 2 threads for the
same cores. Throughput = B / median step time of rank 0 (its step time includes waiting for
the other rank's gradients), over the steps after the first 20. Communication per step:
the CLI's payload line (float32 gradients + loss per rank per step) and what a ring
all-reduce moves per rank, 2 (N - 1) / N times the payload."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(args, ranks, threads, batch, policy, work):
    metrics = os.path.join(work, f"{policy}-{ranks}-{threads}.jsonl")
    command = [args.cli, "train", args.model, "--data", args.data, "--policy", policy, "--batch-size", str(batch),
               "--max-steps", str(args.steps), "--threads", str(threads), "--metrics", metrics, "--eval-limit", "1"]
    if ranks > 1:
        command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] + command
    done = subprocess.run(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stdout[-2000:]}")
    with open(metrics) as lines:
        steps = [json.loads(line)["step_ms"] for line in lines if '"step"' in line]
    payload = re.search(r"all-reduce per step and rank: ([0-9.]+) KiB", done.stdout)
    return statistics.median(steps[20:]), float(payload.group(1)) if payload else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--policies", default="float32,mixed_float16,mixed_bfloat16")
    args = parser.parse_args()
    print(f"model {os.path.basename(args.model)}, global batch {args.batch}, {args.steps} steps, "
          f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'policy':<16}{'1 rank x1 thr':>15}{'1 rank x2 thr':>15}{'2 ranks x1 thr':>16}{'2r / 1r x2':>12}"
          f"{'payload KiB':>13}{'ring KiB/rank':>15}")
    with tempfile.TemporaryDirectory() as work:
        for policy in args.policies.split(","):
            one_1, _ = run(args, 1, 1, args.batch, policy, work)
            one_2, _ = run(args, 1, 2, args.batch, policy, work)
            two, payload = run(args, 2, 1, args.batch // 2, policy, work)
            rate = lambda ms: args.batch / (ms / 1000.0)
            print(f"{policy:<16}{rate(one_1):>15.0f}{rate(one_2):>15.0f}{rate(two):>16.0f}"
                  f"{rate(two) / rate(one_2):>12.2f}{payload:>13.1f}{payload:>15.1f}")
    print("samples/s; ring KiB/rank = 2 (N - 1) / N x payload = payload for N = 2")


if __name__ == "__main__":
    main()
