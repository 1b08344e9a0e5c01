#!/usr/bin/env python3
"""Converter benchmark: onnx-amp convert against onnxconverter-common's
convert_float_to_float16 on the models of make_bench_models.py.

Each conversion runs as its own child process (load + convert + save, as a user runs
it); wall seconds come from the parent and the peak RSS from that child's own rusage
(os.wait4), so the two tools are measured the same way. Prints a table and writes
out/convert_bench.json.

Usage: convert_bench.py [--onnx-amp BIN] [--python PY] [--out DIR] [--models NAME...]
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
    # name, file, saved with external data, runs (best of)
    ("mlp_1gib", "mlp_1gib.onnx", True, 1),
    ("chain_50k", "chain_50k.onnx", False, 2),
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


def Measure(argv, output_path, runs):
    best = None
    for _ in range(runs):
        RemoveOutput(output_path)
        seconds, rss = RunChild(argv)
        if best is None or seconds < best[0]:
            best = (seconds, rss)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnx-amp", default=os.environ.get("ONNX_AMP_BIN", os.path.join(ROOT, "build", "bin", "onnx-amp")))
    parser.add_argument("--python", default=sys.executable, help="python with onnxconverter-common")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--models", nargs="*", default=[m[0] for m in MODELS])
    args = parser.parse_args()

    tools = [
        ("onnx-amp float16", lambda src, dst: [args.onnx_amp, "convert", src, "-o", dst, "--policy", "float16"]),
        ("onnx-amp mixed_float16", lambda src, dst: [args.onnx_amp, "convert", src, "-o", dst, "--policy", "mixed_float16"]),
        # onnx.save does not fsync either: the like-for-like comparison.
        ("onnx-amp float16 --no-sync", lambda src, dst: [args.onnx_amp, "convert", src, "-o", dst, "--policy", "float16",
                                                         "--no-sync"]),
    ]
    rows = []
    for name, file_name, external, runs in MODELS:
        if name not in args.models:
            continue
        src = os.path.join(args.out, file_name)
        size = ModelBytes(src)
        results = {}
        for tool, make_argv in tools:
            dst = os.path.join(args.out, f"{name}.{'_'.join(tool.split()[1:]).replace('-', '')}.onnx")
            try:
                results[tool] = Measure(make_argv(src, dst), dst, runs)
            except RuntimeError as error:
                print(f"FAILED {tool} on {name}: {error}", file=sys.stderr)
                results[tool] = None
        dst = os.path.join(args.out, f"{name}.occ_float16.onnx")
        results["onnxconverter-common"] = Measure(
            [args.python, "-c", OCC_SCRIPT, src, dst, "1" if external else "0"], dst, runs)
        occ_seconds = results["onnxconverter-common"][0]
        for tool, result in results.items():
            row = {"model": name, "model_bytes": size, "tool": tool, "runs": runs}
            if result is None:
                row.update({"failed": True})
            else:
                seconds, rss = result
                row.update({"seconds": seconds, "peak_rss_bytes": rss, "rss_over_size": rss / size,
                            "speedup_vs_onnxconverter_common": occ_seconds / seconds})
            rows.append(row)

    header = f"{'model':<10} {'size MiB':>9} {'tool':<27} {'seconds':>8} {'peak RSS MiB':>12} {'RSS/size':>8} {'speedup':>8}"
    print(header)
    print("-" * len(header))
    for r in rows:
        if r.get("failed"):
            print(f"{r['model']:<10} {r['model_bytes'] / MIB:>9.1f} {r['tool']:<27} {'FAILED':>8}")
            continue
        print(f"{r['model']:<10} {r['model_bytes'] / MIB:>9.1f} {r['tool']:<27} {r['seconds']:>8.2f} "
              f"{r['peak_rss_bytes'] / MIB:>12.1f} {r['rss_over_size']:>8.2f} {r['speedup_vs_onnxconverter_common']:>7.1f}x")
    with open(os.path.join(args.out, "convert_bench.json"), "w") as f:
        json.dump({"onnx_amp": args.onnx_amp, "cpu_count": os.cpu_count(),
                   "load_average": os.getloadavg(), "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
