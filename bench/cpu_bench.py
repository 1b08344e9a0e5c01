"""CPU benchmark: onnx-amp against PyTorch (training) and ONNX Runtime (inference),
interleaved in one run on the same models, batches and thread count.

Training rows: `onnx-amp train --max-steps S` per policy (float32, mixed_bfloat16,
mixed_float16; RMSprop) against bench/torch_train.py (PyTorch float32 and bfloat16
autocast); each round runs every configuration once as its own process, in turn, and
a row's time is the median `step_ms` over all rounds, the first steps of each process
left out as warm-up. Peak RSS is each process's own (wait4). Inference rows: one
worker process per configuration (bench/infer_worker.cc for ours, bench/ort_worker.py
for ONNX Runtime) that times one run per request; requests go to the workers in turn.
The MLP rows also show oneDNN's own rate on the step's GEMM shapes (bench/gemm_rate.cc,
prepacked weights), and the run starts by measuring the CPU's peak multiply-add rates on
the same threads (`gemm_rate --peak`), which bound any GEMM. Prints the tables and the
issue's checks; writes JSON with every number.
"""

import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_report

HERE = Path(__file__).resolve().parent
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
TORCH_PRECISIONS = ("float32", "bf16_autocast")
# Variables that pin OpenBLAS's kernels; the PyTorch float32 process runs without them.
OPENBLAS_PINS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# OpenBLAS kernels for the CPU's widest vector ISA, best first: what the PyTorch float32
# process gets when OpenBLAS's own detection falls back to a generic SSE core, as
# OpenBLAS 0.3.21 does for Intel Xeons newer than it when PyTorch loads it.
OPENBLAS_CORES_BY_FLAG = (("avx512_bf16", "Cooperlake"), ("avx512f", "SkylakeX"), ("avx2", "Haswell"))
OPENBLAS_VECTOR_CORES = {"Cooperlake", "SkylakeX", "SapphireRapids", "Haswell", "Zen"}
# --max-cpu-isa: what holds each side's processes to that instruction set, so that an
# AVX-512 machine measures what an AVX2 one would. Ours (and gemm_rate) through
# ONNX_AMP_MAX_CPU_ISA and oneDNN's own variable; PyTorch through ATEN_CPU_CAPABILITY and
# OpenBLAS's core (its float32 GEMMs). PyTorch's bfloat16 autocast runs on oneDNN, which
# held to AVX2 refuses bfloat16 where PyTorch would fall back on a real AVX2 CPU, so
# oneDNN stays uncapped in PyTorch. ONNX Runtime has no such switch: its rows stay on the
# CPU's widest kernels, and the table says so.
ISA_CAPS = {
    "avx2": {"ours": {"ONNX_AMP_MAX_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
             "pytorch": {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}},
    "avx512": {"ours": {"ONNX_AMP_MAX_CPU_ISA": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
               "pytorch": {"ATEN_CPU_CAPABILITY": "avx512", "OPENBLAS_CORETYPE": "SkylakeX"}},
}
MAX_CPU_ISA = None  # set from --max-cpu-isa


def capped_env(side, env=None):
    """`env` (default: this process's) for a process of `side` ("ours" or "pytorch"), with
    --max-cpu-isa's variables."""
    env = dict(os.environ if env is None else env)
    if MAX_CPU_ISA is not None:
        env.update(ISA_CAPS[MAX_CPU_ISA][side])
    return env


def mlp_training_shapes(batch, units, features=784, classes=10):
    """The GEMMs of one MLP training step as gemm_rate shapes (MxKxN:AB) and their FLOPs."""
    shapes = [f"{batch}x{features}x{units}:nn", f"{batch}x{units}x{units}:nn", f"{batch}x{units}x{classes}:nn",
              f"{batch}x{classes}x{units}:nt", f"{batch}x{units}x{units}:nt",
              f"{features}x{batch}x{units}:tn", f"{units}x{batch}x{units}:tn", f"{units}x{batch}x{classes}:tn"]
    return shapes, sum(2 * m * k * n for m, k, n in (parse_dims(s) for s in shapes))


def mlp_inference_shapes(batch, units, features=784, classes=10):
    shapes = [f"{batch}x{features}x{units}:nn", f"{batch}x{units}x{units}:nn", f"{batch}x{units}x{classes}:nn"]
    return shapes, sum(2 * m * k * n for m, k, n in (parse_dims(s) for s in shapes))


def parse_dims(shape):
    return tuple(int(v) for v in shape.split(":")[0].split("x"))


def gemm_rate(tools, dtype, shapes, threads):
    """Sum of oneDNN's median milliseconds over `shapes`."""
    command = [str(tools["gemm_rate"]), "--dtype", dtype, "--reps", "5"]
    for shape in shapes:
        command += ["--shape", shape]
    env = capped_env("ours", dict(os.environ, OMP_NUM_THREADS=str(threads)))
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return sum(row["median_ms"] for row in rows), rows


def gemm_dtypes():
    """oneDNN's GEMM rows: float32 and bfloat16, float32 alone under --max-cpu-isa (oneDNN
    held below AVX512_BF16 may refuse bfloat16 matmuls)."""
    return ("f32",) if MAX_CPU_ISA is not None else ("f32", "bf16")


def peak_rates(tools, threads, probes=3):
    """The CPU's peak GFLOP/s on `threads` threads: {"f32_fma": .., "bf16_dot": ..} (the latter
    only where the CPU has AVX512_BF16), the best of `probes` runs: a probe that shares the
    cores with anything (a VM's neighbours included) only reads low."""
    command = [str(tools["gemm_rate"]), "--peak", "--threads", str(threads)]
    best = {}
    for _ in range(probes):
        out = subprocess.run(command, check=True, capture_output=True, text=True, env=capped_env("ours")).stdout
        for row in map(json.loads, out.splitlines()):
            if row.get("gflops"):
                best[row["peak"]] = max(best.get(row["peak"], 0.0), row["gflops"])
    return best


def run_measured(command, env=None):
    """Runs a child; returns (stdout, peak RSS in MiB) from its own rusage."""
    with tempfile.TemporaryFile(mode="w+") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr = child.stderr.read()
        child.stderr.close()
        if child.returncode != 0:
            raise SystemExit(f"cpu_bench: {' '.join(map(str, command))} failed ({child.returncode}):\n{stderr[-2000:]}")
        out.seek(0)
        return out.read(), usage.ru_maxrss / 1024.0


def train_ours(tools, case, policy, args):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = Path(tmp) / "metrics.jsonl"
        command = [str(tools["onnx-amp"]), "train", str(case["model"]), "--data", str(case["data"]),
                   "--policy", policy, "--optimizer", "rmsprop", "--batch-size", str(case["batch"]),
                   "--max-steps", str(case["steps"]), "--metrics", str(metrics), "--threads", str(args.threads)]
        _, rss = run_measured(command, capped_env("ours"))
        steps = [json.loads(line) for line in metrics.read_text().splitlines()]
    times = [s["step_ms"] for s in steps if "step_ms" in s]
    return times[args.warmup:], rss, {}


def cpu_flags():
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


@functools.cache
def torch_float32_env():
    """The PyTorch float32 process's environment: OpenBLAS's pins removed, and, where
    OpenBLAS then detects only a generic core, the core for the CPU's widest ISA set
    (the table reports both). Probed once per benchmark run."""
    env = dict(os.environ)
    for name in OPENBLAS_PINS:
        env.pop(name, None)
    probe = subprocess.run([sys.executable, str(HERE / "torch_train.py"), "--blas-only"], env=env, check=True,
                           capture_output=True, text=True).stdout
    detected = json.loads(probe.splitlines()[-1]).get("openblas_core")
    note = {}
    if detected is not None and detected not in OPENBLAS_VECTOR_CORES:
        flags = cpu_flags()
        chosen = next((core for flag, core in OPENBLAS_CORES_BY_FLAG if flag in flags), None)
        if chosen is not None:
            env["OPENBLAS_CORETYPE"] = chosen
            note = {"openblas_detected_core": detected}
    return env, note


def train_torch(case, precision, args):
    command = [sys.executable, str(HERE / "torch_train.py"), "--model", case["kind"], "--batch", str(case["batch"]),
               "--steps", str(case["steps"]), "--precision", precision, "--threads", str(args.threads)]
    env, note = torch_float32_env() if precision == "float32" else (dict(os.environ), {})
    out, rss = run_measured(command, capped_env("pytorch", env))
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    times = [line["step_ms"] for line in lines if "step_ms" in line]
    return times[args.warmup:], rss, dict(lines[0], **note)


def training_rows(tools, cases, args):
    rows = []
    for case in cases:
        configs = [("onnx-amp", p) for p in POLICIES] + [("pytorch", p) for p in TORCH_PRECISIONS]
        samples = {c: [] for c in configs}
        rss = {c: 0.0 for c in configs}
        info = {}
        for round_index in range(args.rounds):
            # Alternate the order between rounds so that neither side always runs first.
            order = configs if round_index % 2 == 0 else list(reversed(configs))
            for config in order:
                progress(f"train {case['name']} batch {case['batch']}: {config[0]} {config[1]} "
                         f"(round {round_index + 1}/{args.rounds})")
                if config[0] == "onnx-amp":
                    times, peak, extra = train_ours(tools, case, config[1], args)
                else:
                    times, peak, extra = train_torch(case, config[1], args)
                samples[config] += times
                rss[config] = max(rss[config], peak)
                info.update({f"{config[1]}_{k}": v for k, v in extra.items()})
        for config in configs:
            rows.append({"model": case["name"], "batch": case["batch"], "runtime": config[0],
                         "precision": config[1], "median_ms": statistics.median(samples[config]),
                         "min_ms": min(samples[config]), "steps": len(samples[config]),
                         "peak_rss_mib": rss[config], "gflop": case.get("gflop"), "info": info})
        if case.get("gemm_shapes"):
            for dtype in gemm_dtypes():
                total, detail = gemm_rate(tools, dtype, case["gemm_shapes"], args.threads)
                rows.append({"model": case["name"], "batch": case["batch"], "runtime": "oneDNN GEMMs",
                             "precision": dtype, "median_ms": total, "gflop": case["gflop"], "detail": detail})
    return rows


class Worker:
    """A timing worker process: one run per line written, its milliseconds read back."""

    def __init__(self, command, env=None):
        self.command = command
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"cpu_bench: {' '.join(map(str, command))} did not start:\n"
                             f"{line}\n{self.process.stderr.read()[-2000:]}")

    def time_run(self):
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"cpu_bench: {' '.join(map(str, self.command))} stopped:\n"
                             f"{self.process.stderr.read()[-2000:]}")
        return float(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def inference_rows(tools, models, args):
    rows = []
    for model in models:
        for batch in args.infer_batches:
            workers = {("onnxruntime", "float32"): [sys.executable, str(HERE / "ort_worker.py"), str(model["path"])]}
            for policy in POLICIES:
                workers[("onnx-amp", policy)] = [str(tools["cpu_bench_infer"]), str(model["converted"][policy])]
            progress(f"infer {model['name']} batch {batch}: starting {len(workers)} workers")
            started = {}
            for key, command in workers.items():
                env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
                started[key] = Worker(command + ["--batch", str(batch), "--threads", str(args.threads)],
                                      env=capped_env("ours", env) if key[0] == "onnx-amp" else env)
            samples = {key: [] for key in started}
            for _ in range(args.runs):
                for key, worker in started.items():
                    # The previous worker's threads spin for a while after its run
                    # (libgomp's and ONNX Runtime's pools both do); let them go idle so
                    # they do not take the cores from the run being timed.
                    time.sleep(args.settle_ms / 1000)
                    samples[key].append(worker.time_run())
            for worker in started.values():
                worker.close()
            gflop = model["gflop"](batch) if model.get("gflop") else None
            for (runtime, precision), times in samples.items():
                rows.append({"model": model["name"], "batch": batch, "runtime": runtime, "precision": precision,
                             "median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times),
                             "gflop": gflop})
            if model.get("gemm_shapes"):
                for dtype in gemm_dtypes():
                    total, detail = gemm_rate(tools, dtype, model["gemm_shapes"](batch), args.threads)
                    rows.append({"model": model["name"], "batch": batch, "runtime": "oneDNN GEMMs",
                                 "precision": dtype, "median_ms": total, "gflop": gflop, "detail": detail})
    return rows


def progress(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def convert(tools, model, policy, out):
    target = out / f"{Path(model).stem}.{policy}.onnx"
    if policy == "float32":
        return model
    if not target.exists() or target.stat().st_mtime < Path(model).stat().st_mtime:
        subprocess.run([str(tools["onnx-amp"]), "convert", str(model), "--policy", policy, "-o", str(target)],
                       check=True, stdout=subprocess.DEVNULL)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, required=True, help="folder with onnx-amp, cpu_bench_infer, gemm_rate")
    parser.add_argument("--out", type=Path, default=HERE / "out", help="folder for the results and converted models")
    parser.add_argument("--inputs", type=Path,
                        help="folder holding mlp_u4096.onnx, resnet18.onnx and train_data.npz (default: --out)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="processes per training configuration")
    parser.add_argument("--steps", type=int, default=12, help="steps per training process (batch 8192: half)")
    parser.add_argument("--warmup", type=int, default=2, help="first steps of each process left out")
    parser.add_argument("--runs", type=int, default=20, help="timed inference runs per configuration")
    parser.add_argument("--settle-ms", type=float, default=50,
                        help="pause before each timed inference run, while the other workers' threads go idle")
    parser.add_argument("--infer-batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--only", choices=("train", "infer"), help="run one half")
    parser.add_argument("--train-cases", nargs="+", default=["mlp:1024", "mlp:8192", "cnn:256"],
                        help="model:batch pairs (model mlp or cnn)")
    parser.add_argument("--infer-models", nargs="+",
                        default=["mlp_u4096", "cnn", "resnet_block", "transformer_block", "resnet18"])
    parser.add_argument("--max-cpu-isa", choices=sorted(ISA_CAPS),
                        help="hold onnx-amp, oneDNN and PyTorch to this instruction set (ONNX Runtime cannot be)")
    args = parser.parse_args(argv)
    global MAX_CPU_ISA
    MAX_CPU_ISA = args.max_cpu_isa

    tools = {name: args.bin / name for name in ("onnx-amp", "cpu_bench_infer", "gemm_rate")}
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    inputs = args.inputs or out
    units = 4096
    mlp = inputs / "mlp_u4096.onnx"
    repo = HERE.parent
    result = {"machine": bench_report.machine_summary(), "threads": args.threads, "python": platform.python_version(),
              "command": " ".join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])),
              "peak_gflops": peak_rates(tools, args.threads), "max_cpu_isa": args.max_cpu_isa}
    if args.max_cpu_isa is not None:
        # The checks treat the CPU as one without what the cap hides.
        result["machine"].update(avx512_bf16=False, avx512_fp16=False)
    if args.only != "infer":
        cases = []
        for entry in args.train_cases:
            kind, batch = entry.split(":")
            batch = int(batch)
            case = {"kind": kind, "batch": batch, "data": inputs / "train_data.npz",
                    "steps": args.steps if batch <= 1024 else max(args.warmup + 3, args.steps // 2)}
            if kind == "mlp":
                shapes, flops = mlp_training_shapes(batch, units)
                case.update(name="mlp_u4096", model=mlp, gemm_shapes=shapes, gflop=flops / 1e9)
            else:
                case.update(name="cnn", model=repo / "models" / "cnn.onnx")
            cases.append(case)
        result["training"] = training_rows(tools, cases, args)
    if args.only != "train":
        models = []
        for name in args.infer_models:
            path = mlp if name == "mlp_u4096" else (inputs / "resnet18.onnx" if name == "resnet18"
                                                     else repo / "models" / f"{name}.onnx")
            model = {"name": name, "path": path,
                     "converted": {p: convert(tools, path, p, out) for p in POLICIES}}
            if name == "mlp_u4096":
                model["gemm_shapes"] = lambda b: mlp_inference_shapes(b, units)[0]
                model["gflop"] = lambda b: mlp_inference_shapes(b, units)[1] / 1e9
            models.append(model)
        result["inference"] = inference_rows(tools, models, args)
    text = bench_report.render(result)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu_bench.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "cpu_bench.txt").write_text(text + "\n")
    print(f"written: {out / 'cpu_bench.json'}, {out / 'cpu_bench.txt'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
