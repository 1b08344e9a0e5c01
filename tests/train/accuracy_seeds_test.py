"""The guide's MLP (U=64) trained on Fashion-MNIST with RMSprop (Keras defaults) under
float32, mixed_float16 and mixed_bfloat16, for seeds 0, 1, 2 and the same epochs: the
mean final test accuracy of each mixed policy is within 0.5 points of float32's."""
import argparse
import concurrent.futures
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

SEEDS = (0, 1, 2)
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
MAX_GAP_POINTS = 0.5
MIN_FLOAT32_ACCURACY = 80.0  # percent; 5 epochs at batch 256 reach about 86


def train(cli, model, data, policy, seed, epochs, batch_size, tmp):
    """Final test accuracy (t10k, all 10000 images) of one run, in percent."""
    metrics = os.path.join(tmp, f"{policy}_{seed}.jsonl")
    # Two runs share the two cores: one thread each.
    run = subprocess.run([cli, "train", model, "--data", data, "--policy", policy, "--optimizer", "rmsprop",
                          "--batch-size", str(batch_size), "--epochs", str(epochs), "--seed", str(seed),
                          "--threads", "1", "--metrics", metrics], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{policy} seed {seed}: onnx-amp train exited {run.returncode}: {run.stderr[-2000:]}")
    with open(metrics) as f:
        epoch_lines = [json.loads(line) for line in f if '"epoch"' in line]
    if len(epoch_lines) != epochs:
        raise RuntimeError(f"{policy} seed {seed}: {len(epoch_lines)} epoch lines, expected {epochs}")
    return 100.0 * epoch_lines[-1]["eval_accuracy"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--data", required=True, help="Fashion-MNIST IDX folder")
    parser.add_argument("--epochs", type=int, default=5, help="the guide's 5")
    # The guide's 8192 gives only 35 steps in 5 epochs: the MLP is still near 74% and its
    # last-epoch accuracy swings by a point; at 256 it settles near 86% (about 350 s CPU
    # for the 9 runs).
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()
    model = os.path.join(args.models, "mlp_u64.onnx")
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = {(policy, seed): pool.submit(train, args.cli, model, args.data, policy, seed, args.epochs,
                                            args.batch_size, tmp)
                for seed in SEEDS for policy in POLICIES}
        accuracy = {key: future.result() for key, future in runs.items()}
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{args.epochs} epochs, batch size {args.batch_size}: 9 runs in {time.monotonic() - start:.0f} s wall, "
          f"{cpu.ru_utime + cpu.ru_stime:.0f} s CPU")
    print(f"{'policy':<16}" + "".join(f"{'seed ' + str(s):>10}" for s in SEEDS) + f"{'mean':>10}")
    means = {}
    for policy in POLICIES:
        values = [accuracy[(policy, seed)] for seed in SEEDS]
        means[policy] = statistics.mean(values)
        print(f"{policy:<16}" + "".join(f"{v:>10.2f}" for v in values) + f"{means[policy]:>10.2f}")
    failures = 0
    # The comparison means something only between trained models.
    if means["float32"] < MIN_FLOAT32_ACCURACY:
        print(f"float32 mean accuracy {means['float32']:.2f} is below {MIN_FLOAT32_ACCURACY}: did not train")
        failures += 1
    for policy in POLICIES[1:]:
        gap = means[policy] - means["float32"]
        ok = abs(gap) <= MAX_GAP_POINTS
        print(f"{policy}: mean {gap:+.2f} points against float32 (limit {MAX_GAP_POINTS}) {'ok' if ok else 'FAIL'}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
