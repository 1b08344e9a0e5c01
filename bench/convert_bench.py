#!/usr/bin/env python3
"""Converter benchmark: onnx-amp convert against onnxconverter-common's
convert_float_to_float16 on the models of make_bench_models.py.

Each conversion runs as its own child process (load + convert + save, as a user runs
it); wall seconds come from the parent and the peak RSS from that child's own rusage
(os.wait4), so the two tools are measured the same way. The runs are interleaved: each
round runs every tool once, onnxconverter-common first, so a machine whose load changes
slows every tool of a round alike. A tool's speedup is the median over the rounds of
onnxconverter-common's seconds over the tool's in the same round; its seconds and peak
RSS are its medians. Prints a table and writes out/convert_bench.json.

Usage: convert_bench.py [--onnx-amp BIN] [--python PY] [--out DIR] [--models NAME...]
                        [--rounds N]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1 << 20

# Runs onnxconverter-common in the child: keep_io_types=True matches onnx-amp's default.
OCC_SCRIPT = r"""
import os, sys
import onnx
from onnxconverter_common.float16 import convert_float_to_float16
src, dst, external = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
model = onnx.load(src)
model = convert_float_to_float16(model, keep_io_types=True)
if external:
    data = os.path.basename(dst) + ".data"
    onnx.save_model(model, dst, save_as_external_data=True, all_tensors_to_one_file=True, location=data)
else:
    onnx.save_model(model, dst)
"""

MODELS = [
    # name, file, saved with external data, rounds
    ("mlp_1gib", "mlp_1gib.onnx", True, 3),
    ("chain_50k", "chain_50k.onnx", False, 5),
]


def ModelBytes(path):
    total = os.path.getsize(path)
    data = path + ".data"
    if os.path.exists(data):
        total += os.path.getsize(data)
    return total


def RemoveOutput(path):
    for p in (path, path + ".data"):
        if os.path.exists(p):
            os.remove(p)


def RunChild(argv):
    """Runs argv; returns (seconds, peak RSS bytes). Raises on a non-zero exit."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}:\n{output.decode(errors='replace')}")
    return seconds, usage.ru_maxrss * 1024  # Linux reports KiB


# The goals: (model, tool) -> (least speedup, most peak RSS over model size).
GOALS = {
    ("chain_50k", "onnx-amp float16"): (6, None),
    ("chain_50k", "onnx-amp float16 --verify none"): (10, None),
    ("mlp_1gib", "onnx-amp float16"): (10, 0.1),
}


def GoalLine(row):
    speedup, rss_over_size = GOALS[(row["model"], row["tool"])]
    goal = f">= {speedup}x" + (f" at <= {rss_over_size}x model memory" if rss_over_size else "")
    if row.get("failed"):
        return f"{row['model']} {row['tool']}: goal {goal}: FAILED"
    met = row["speedup_vs_onnxconverter_common"] >= speedup and (rss_over_size is None or
                                                                 row["rss_over_size"] <= rss_over_size)
    return (f"{row['model']} {row['tool']}: goal {goal}: {'met' if met else 'NOT met'} "
            f"({row['speedup_vs_onnxconverter_common']:.1f}x, {row['rss_over_size']:.2f}x)")


def MeasureOnce(argv, output_path):
    RemoveOutput(output_path)
    return RunChild(argv)


def Median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def ToolSlug(tool):
    return "_".join(tool.split()[1:]).replace("-", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnx-amp", default=os.environ.get("ONNX_AMP_BIN", os.path.join(ROOT, "build", "bin", "onnx-amp")))
    parser.add_argument("--python", default=sys.executable, help="python with onnxconverter-common")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--models", nargs="*", default=[m[0] for m in MODELS])
    parser.add_argument("--rounds", type=int, default=0, help="rounds per model (default: 3 for the 1 GiB model, 5 "
                                                               "for the 50k-node one)")
    args = parser.parse_args()

    tools = [
        ("onnx-amp float16", ["--policy", "float16"]),
        ("onnx-amp float16 --verify none", ["--policy", "float16", "--verify", "none"]),
        ("onnx-amp float16 --verify full", ["--policy", "float16", "--verify", "full"]),
        ("onnx-amp mixed_float16", ["--policy", "mixed_float16"]),
        # onnx.save does not fsync either: the like-for-like comparison.
        ("onnx-amp float16 --no-sync", ["--policy", "float16", "--no-sync"]),
    ]
    occ = "onnxconverter-common"
    rows = []
    for name, file_name, external, rounds in MODELS:
        if name not in args.models:
            continue
        rounds = args.rounds or rounds
        src = os.path.join(args.out, file_name)
        size = ModelBytes(src)
        runs = {occ: []}
        runs.update({tool: [] for tool, _ in tools})
        failed = set()
        occ_dst = os.path.join(args.out, f"{name}.occ_float16.onnx")
        occ_argv = [args.python, "-c", OCC_SCRIPT, src, occ_dst, "1" if external else "0"]
        for round_index in range(rounds):
            runs[occ].append(MeasureOnce(occ_argv, occ_dst))
            for tool, flags in tools:
                if tool in failed:
                    continue
                dst = os.path.join(args.out, f"{name}.{ToolSlug(tool)}.onnx")
                try:
                    runs[tool].append(MeasureOnce([args.onnx_amp, "convert", src, "-o", dst] + flags, dst))
                except RuntimeError as error:
                    print(f"FAILED {tool} on {name}: {error}", file=sys.stderr)
                    failed.add(tool)
            print(f"{name}: round {round_index + 1} of {rounds} done", file=sys.stderr, flush=True)
        for tool in [occ] + [t for t, _ in tools]:
            row = {"model": name, "model_bytes": size, "tool": tool, "rounds": len(runs[tool])}
            if tool in failed or not runs[tool]:
                row["failed"] = True
            else:
                seconds = [r[0] for r in runs[tool]]
                rss = Median([r[1] for r in runs[tool]])
                ratios = [o[0] / t[0] for o, t in zip(runs[occ], runs[tool])]
                row.update({"seconds": Median(seconds), "seconds_each_round": seconds, "peak_rss_bytes": rss,
                            "rss_over_size": rss / size, "speedup_vs_onnxconverter_common": Median(ratios),
                            "speedup_each_round": ratios})
            rows.append(row)

    header = f"{'model':<10} {'size MiB':>9} {'tool':<31} {'seconds':>8} {'peak RSS MiB':>12} {'RSS/size':>8} {'speedup':>8}"
    print(header)
    print("-" * len(header))
    for r in rows:
        if r.get("failed"):
            print(f"{r['model']:<10} {r['model_bytes'] / MIB:>9.1f} {r['tool']:<31} {'FAILED':>8}")
            continue
        print(f"{r['model']:<10} {r['model_bytes'] / MIB:>9.1f} {r['tool']:<31} {r['seconds']:>8.2f} "
              f"{r['peak_rss_bytes'] / MIB:>12.1f} {r['rss_over_size']:>8.2f} {r['speedup_vs_onnxconverter_common']:>7.1f}x")
    for r in rows:
        if (r["model"], r["tool"]) in GOALS:
            print(GoalLine(r))
    with open(os.path.join(args.out, "convert_bench.json"), "w") as f:
        json.dump({"onnx_amp": args.onnx_amp, "cpu_count": os.cpu_count(),
                   "load_average": os.getloadavg(), "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
