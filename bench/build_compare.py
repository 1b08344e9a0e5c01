"""Is a change to the runtime slower on the CPU? Times two builds of onnx-amp on the same
work, interleaved: inference (runtime_bench with fusion and prepacking on) and training
steps (`onnx-amp train`) of the bundled CNN and ResNet block and the U=4096 MLP, float32
and mixed precision.

The measure is the CPU time (user + system, from the child's rusage) of one thread
(`--threads 1` by default), not wall time: on a shared machine another process's load
stretches the wall time of a run by whatever the scheduler does, while the CPU time of a
single-threaded run moves only with cache and frequency effects. Each round runs every case
once with each build, in random order; the ratio is the median over rounds of new/old.

    bench/run-build-compare OLD_BUILD NEW_BUILD [--rounds N] [--threads T]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cpu_seconds(command):
    """Runs `command` (output discarded) and returns its CPU seconds, or raises with its stderr."""
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{err.read().decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def cases(out, models, threads):
    """(name, function of a build folder -> command) for every case."""
    def infer(model, batch):
        return lambda build: [build / "bin" / "runtime_bench", model, "--batch", str(batch), "--runs", "20",
                              "--threads", str(threads)]

    def train(model, batch, policy):
        return lambda build: [build / "bin" / "onnx-amp", "train", model, "--data", out / "train_data.npz",
                              "--policy", policy, "--optimizer", "rmsprop", "--batch-size", str(batch),
                              "--max-steps", "8", "--threads", str(threads), "--metrics", os.devnull]

    result = []
    for name, model, batch in (("cnn", models / "cnn.onnx", 64), ("resnet_block", models / "resnet_block.onnx", 64),
                               ("mlp_u4096", out / "mlp_u4096.onnx", 128)):
        result.append((f"infer {name} float32 b{batch}", infer(model, batch)))
        for policy in ("mixed_bfloat16", "mixed_float16"):
            result.append((f"infer {name} {policy} b{batch}", infer(out / f"{name}.{policy}.onnx", batch)))
    for name, model in (("cnn", models / "cnn.onnx"), ("mlp_u4096", out / "mlp_u4096.onnx")):
        for policy in ("float32", "mixed_bfloat16", "mixed_float16"):
            result.append((f"train {name} {policy} b128", train(model, 128, policy)))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="build folder of the baseline (has bin/onnx-amp, bin/runtime_bench)")
    parser.add_argument("new", type=Path, help="build folder of the change")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "out", help="folder of the models and training data")
    parser.add_argument("--json", type=Path, help="where the report goes (default OUT/build_compare.json)")
    args = parser.parse_args(argv)
    builds = {"old": args.old.resolve(), "new": args.new.resolve()}
    all_cases = cases(args.out, HERE.parent / "models", args.threads)
    seconds = {name: {"old": [], "new": []} for name, _ in all_cases}
    for round_index in range(args.rounds):
        for name, command in all_cases:
            order = ["old", "new"]
            random.shuffle(order)
            for which in order:
                seconds[name][which].append(cpu_seconds(command(builds[which])))
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    rows = []
    print(f"{'case':40s} {'old CPU s':>10s} {'new CPU s':>10s} {'new/old':>8s}")
    for name, _ in all_cases:
        old, new = seconds[name]["old"], seconds[name]["new"]
        ratio = statistics.median(n / o for o, n in zip(old, new))
        rows.append({"case": name, "old_cpu_s": old, "new_cpu_s": new, "ratio": ratio})
        print(f"{name:40s} {statistics.median(old):10.2f} {statistics.median(new):10.2f} {ratio:7.3f}x")
    worst = max(rows, key=lambda row: row["ratio"])
    print(f"largest new/old: {worst['ratio']:.3f}x ({worst['case']})")
    report = {"old": str(builds["old"]), "new": str(builds["new"]), "rounds": args.rounds, "threads": args.threads,
              "rows": rows}
    (args.json or args.out / "build_compare.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
