"""Data-parallel scaling of `onnx-amp train` on one machine: samples/s with 1 rank and with
`mpirun -np 2` at the same global batch, with the gradient all-reduce beside the backward pass
(the default) and after it (--no-dist-overlap), and what each step all-reduces.

    dist_bench.py --cli BUILD/bin/onnx-amp --model MLP.onnx --data FASHION_MNIST_DIR
                  [--batch 256] [--steps 300] [--rounds 2] [--bucket-mib 0.05 (cuda: 8)]
                  [--policies float32,mixed_float16,mixed_bfloat16] [--device cpu|cuda]

For each policy: a plain run with --batch-size B and two 2-rank runs with --batch-size B/2
(the same B samples per step), one overlapping the all-reduce with the backward pass and one
not, each with --threads 1 per rank so the two ranks use the two cores one run of 1 rank at 2
threads would use; and 1-rank runs at 1 and 2 threads for the same cores. The 2-rank runs use
--bucket-mib buckets (the default 8 MiB holds the whole MLP in one bucket, which can only start
once the backward pass is done). Runs of one policy are interleaved, --rounds times, and each
column reports its best round (the one least disturbed by other work on the machine).
Throughput = B / median step time of rank 0 (its step time includes waiting for the other
rank's gradients), over the steps after the first 20. Communication per step: the CLI's
payload line (float32 gradients + loss per rank per step) and what a ring all-reduce moves per
rank, 2 (N - 1) / N times the payload.

--device cuda (only where a GPU is): 1 rank on GPU 0 with --batch-size B against `mpirun -np 2`
with B/2 per rank, each rank on its own GPU (its local rank modulo the visible GPUs: with one
GPU both ranks share it, which the table's GPU count says), gradients summed through NCCL
after the backward pass; interleaved --rounds times, best round per column."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(args, ranks, threads, batch, policy, work, overlap=True):
    metrics = os.path.join(work, f"{policy}-{ranks}-{threads}-{overlap}.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    command = [args.cli, "train", args.model, "--data", args.data, "--policy", policy, "--batch-size", str(batch),
               "--max-steps", str(args.steps), "--threads", str(threads), "--metrics", metrics, "--eval-limit", "1",
               "--device", args.device]
    if ranks > 1:
        command += ["--dist-bucket-mib", str(args.bucket_mib)] + ([] if overlap else ["--no-dist-overlap"])
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
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bucket-mib", type=float, default=None)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    if args.bucket_mib is None:
        args.bucket_mib = 8.0 if args.device == "cuda" else 0.05
    if args.device == "cuda":
        return cuda_table(args)
    print(f"model {os.path.basename(args.model)}, global batch {args.batch}, {args.steps} steps, "
          f"{args.rounds} rounds, 2-rank buckets {args.bucket_mib} MiB, load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'policy':<16}{'1r x1':>9}{'1r x2':>9}{'2r after':>10}{'2r beside':>11}{'beside/after':>14}"
          f"{'beside/1r x2':>14}{'payload KiB':>13}{'load':>7}")
    rate = lambda ms: args.batch / (ms / 1000.0)
    with tempfile.TemporaryDirectory() as work:
        for policy in args.policies.split(","):
            best = {"one_1": [], "one_2": [], "after": [], "beside": []}
            payload = 0.0
            for _ in range(args.rounds):
                best["one_1"].append(run(args, 1, 1, args.batch, policy, work)[0])
                best["one_2"].append(run(args, 1, 2, args.batch, policy, work)[0])
                best["after"].append(run(args, 2, 1, args.batch // 2, policy, work, overlap=False)[0])
                ms, payload = run(args, 2, 1, args.batch // 2, policy, work, overlap=True)
                best["beside"].append(ms)
            r = {key: rate(min(times)) for key, times in best.items()}
            print(f"{policy:<16}{r['one_1']:>9.0f}{r['one_2']:>9.0f}{r['after']:>10.0f}{r['beside']:>11.0f}"
                  f"{r['beside'] / r['after']:>14.2f}{r['beside'] / r['one_2']:>14.2f}{payload:>13.1f}"
                  f"{os.getloadavg()[0]:>7.2f}")
    print("samples/s (best of the rounds); 2r after = --no-dist-overlap; load = 1-minute load average after the "
          "policy's runs; ring KiB per rank = 2 (N - 1) / N x payload = payload for N = 2")


def visible_gpus():
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))


def cuda_table(args):
    gpus = visible_gpus()
    print(f"--device cuda: model {os.path.basename(args.model)}, global batch {args.batch}, {args.steps} steps, "
          f"{args.rounds} rounds, buckets {args.bucket_mib} MiB, {gpus} GPU(s) visible"
          f"{'' if gpus >= 2 else ' (the 2 ranks share one GPU)'}")
    print(f"{'policy':<16}{'1 rank':>10}{'2 ranks':>10}{'2r / 1r':>9}{'payload KiB':>13}")
    rate = lambda ms: args.batch / (ms / 1000.0)
    with tempfile.TemporaryDirectory() as work:
        for policy in args.policies.split(","):
            one, two, payload = [], [], 0.0
            for _ in range(args.rounds):
                one.append(run(args, 1, 1, args.batch, policy, work)[0])
                ms, payload = run(args, 2, 1, args.batch // 2, policy, work, overlap=False)
                two.append(ms)
            r1, r2 = rate(min(one)), rate(min(two))
            print(f"{policy:<16}{r1:>10.0f}{r2:>10.0f}{r2 / r1:>9.2f}{payload:>13.1f}")
    print("samples/s (best of the rounds); 2 ranks: NCCL all-reduce in float32 after the backward pass")


if __name__ == "__main__":
    sys.exit(main())
