"""Tables and the issue's checks for bench/cpu_bench.py's results."""

import os


def machine_summary():
    model, flags = "", set()
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    return {"cpu": model, "cores": os.cpu_count(), "avx512f": "avx512f" in flags,
            "avx512_bf16": "avx512_bf16" in flags, "avx512_fp16": "avx512_fp16" in flags,
            "amx_bf16": "amx_bf16" in flags, "load_average": os.getloadavg()}


def find(rows, **keys):
    for row in rows:
        if all(row.get(k) == v for k, v in keys.items()):
            return row
    return None


def gflops(row):
    return row["gflop"] / (row["median_ms"] / 1e3) if row and row.get("gflop") else None


def fmt(value, spec=".1f", none="-"):
    return none if value is None else format(value, spec)


def peak_line(result):
    peak = result.get("peak_gflops") or {}
    if "f32_fma" not in peak:
        return []
    text = f"Peak multiply-add rate on {result['threads']} threads: float32 FMA {peak['f32_fma']:.0f} GFLOP/s"
    if "bf16_dot" in peak:
        text += f", bfloat16 dot products (VDPBF16PS) {peak['bf16_dot']:.0f} GFLOP/s"
    return [text]


def training_table(rows, peak):
    lines = ["Training: median ms/step (min), ratios to our float32 and to PyTorch's same precision, "
             "GEMM GFLOP/s of the whole step, peak RSS",
             f"{'model':<10} {'batch':>5} {'runtime':<13} {'precision':<15} {'median':>9} {'min':>9} "
             f"{'/ours f32':>9} {'/pytorch':>9} {'GFLOP/s':>8} {'RSS MiB':>8} {'RSS/f32':>7}"]
    torch_of = {"float32": "float32", "mixed_bfloat16": "bf16_autocast"}
    for row in rows:
        if row["runtime"] == "oneDNN GEMMs":
            continue
        ours32 = find(rows, model=row["model"], batch=row["batch"], runtime="onnx-amp", precision="float32")
        base = None
        if row["runtime"] == "onnx-amp" and row["precision"] in torch_of:
            base = find(rows, model=row["model"], batch=row["batch"], runtime="pytorch",
                        precision=torch_of[row["precision"]])
        lines.append(
            f"{row['model']:<10} {row['batch']:>5} {row['runtime']:<13} {row['precision']:<15} "
            f"{row['median_ms']:>9.1f} {row['min_ms']:>9.1f} {row['median_ms'] / ours32['median_ms']:>8.2f}x "
            f"{fmt(base and row['median_ms'] / base['median_ms'], '.2f'):>8}x {fmt(gflops(row), '.0f'):>8} "
            f"{row['peak_rss_mib']:>8.0f} {row['peak_rss_mib'] / ours32['peak_rss_mib']:>6.2f}x")
    for row in rows:
        if row["runtime"] == "oneDNN GEMMs":
            bound = peak.get("f32_fma" if row["precision"] == "f32" else "bf16_dot")
            of_peak = f", {gflops(row) / bound:.0%} of the peak" if bound else ""
            lines.append(f"{row['model']:<10} {row['batch']:>5} {'oneDNN GEMMs':<13} {row['precision']:<15} "
                         f"{row['median_ms']:>9.1f} {'':>9} {'':>9} {'':>9} {fmt(gflops(row), '.0f'):>8}   "
                         f"(the step's GEMM shapes alone, prepacked weights{of_peak})")
    info = next((row["info"] for row in rows if row.get("info")), {})
    if info:
        lines.append("PyTorch BLAS: " + ", ".join(f"{k}={v}" for k, v in sorted(info.items()) if "blas" in k))
    return lines


def inference_table(rows):
    lines = ["Inference: median ms (min) over the runs; ratio = ours / ONNX Runtime float32 median",
             f"{'model':<13} {'batch':>5} {'ORT f32':>15} {'ours f32':>15} {'ratio':>6} {'med/min':>7} "
             f"{'mixed_bf16':>15} {'ratio':>6} {'mixed_f16':>15} {'ratio':>6} {'GFLOP/s f32|bf16|oneDNN f32|bf16':>34}"]
    keys = sorted({(r["model"], r["batch"]) for r in rows}, key=lambda k: (list(dict.fromkeys(
        r["model"] for r in rows)).index(k[0]), k[1]))
    for model, batch in keys:
        ort = find(rows, model=model, batch=batch, runtime="onnxruntime")
        ours = {p: find(rows, model=model, batch=batch, runtime="onnx-amp", precision=p)
                for p in ("float32", "mixed_bfloat16", "mixed_float16")}
        cell = lambda r: f"{r['median_ms']:.2f} ({r['min_ms']:.2f})"
        rate = "|".join(fmt(gflops(r), ".0f") for r in (
            ours["float32"], ours["mixed_bfloat16"],
            find(rows, model=model, batch=batch, runtime="oneDNN GEMMs", precision="f32"),
            find(rows, model=model, batch=batch, runtime="oneDNN GEMMs", precision="bf16")))
        lines.append(
            f"{model:<13} {batch:>5} {cell(ort):>15} {cell(ours['float32']):>15} "
            f"{ours['float32']['median_ms'] / ort['median_ms']:>5.2f}x "
            f"{ours['float32']['median_ms'] / ours['float32']['min_ms']:>6.2f}x "
            f"{cell(ours['mixed_bfloat16']):>15} {ours['mixed_bfloat16']['median_ms'] / ort['median_ms']:>5.2f}x "
            f"{cell(ours['mixed_float16']):>15} {ours['mixed_float16']['median_ms'] / ort['median_ms']:>5.2f}x "
            f"{rate:>34}")
    return lines


def check(met, text):
    return f"  [{'met' if met else 'NOT MET'}] {text}"


def demand_note(row, target_ms, peak_rate, instruction):
    """What a target step time asks of the whole step's GEMM rate, against the CPU's peak
    for that precision: "; needs N GFLOP/s, P% of the <instruction> peak" (empty where the
    step's FLOPs or the peak are unknown)."""
    if not row.get("gflop") or not peak_rate:
        return ""
    needed = row["gflop"] / (target_ms / 1e3)
    return f"; needs {needed:.0f} GFLOP/s, {needed / peak_rate:.0%} of the {instruction} peak"


def training_checks(rows, machine, peak):
    lines = []
    for (model, batch) in sorted({(r["model"], r["batch"]) for r in rows if r["runtime"] == "onnx-amp"}):
        get = lambda runtime, precision: find(rows, model=model, batch=batch, runtime=runtime, precision=precision)
        f32, bf16, f16 = get("onnx-amp", "float32"), get("onnx-amp", "mixed_bfloat16"), get("onnx-amp", "mixed_float16")
        t32, tbf = get("pytorch", "float32"), get("pytorch", "bf16_autocast")
        label = f"{model} batch {batch}:"
        if model.startswith("mlp") and machine["avx512_bf16"]:
            speedup = f32["median_ms"] / bf16["median_ms"]
            lines.append(check(speedup >= 1.9, f"{label} mixed_bfloat16 {speedup:.2f}x faster than our float32 (>= 1.9x)"))
        if tbf:
            ratio = bf16["median_ms"] / tbf["median_ms"]
            demand = demand_note(bf16, 0.75 * tbf["median_ms"], peak.get("bf16_dot"), "VDPBF16PS")
            lines.append(check(ratio <= 0.75,
                               f"{label} mixed_bfloat16 {ratio:.2f}x PyTorch bf16 autocast (<= 0.75x{demand})"))
        if t32:
            ratio = f32["median_ms"] / t32["median_ms"]
            demand = demand_note(f32, 0.8 * t32["median_ms"], peak.get("f32_fma"), "FMA")
            lines.append(check(ratio <= 0.8, f"{label} float32 {ratio:.2f}x PyTorch float32 (<= 0.8x{demand})"))
        if not machine["avx512_fp16"] and not machine["amx_bf16"]:
            ratio = f16["median_ms"] / f32["median_ms"]
            lines.append(check(ratio <= 1.1, f"{label} mixed_float16 {ratio:.2f}x our float32 (<= 1.1x)"))
        for mixed in (bf16, f16):
            ratio = mixed["peak_rss_mib"] / f32["peak_rss_mib"]
            lines.append(check(ratio <= 1.0, f"{label} peak RSS {mixed['precision']} {ratio:.2f}x float32 (<= 1.0x)"))
    return lines


def inference_checks(rows, machine):
    lines = []
    for (model, batch) in sorted({(r["model"], r["batch"]) for r in rows}):
        ort = find(rows, model=model, batch=batch, runtime="onnxruntime")
        f32 = find(rows, model=model, batch=batch, runtime="onnx-amp", precision="float32")
        bf16 = find(rows, model=model, batch=batch, runtime="onnx-amp", precision="mixed_bfloat16")
        label = f"{model} batch {batch}:"
        ratio = f32["median_ms"] / ort["median_ms"]
        lines.append(check(ratio <= 1.0, f"{label} float32 {ratio:.2f}x ONNX Runtime (<= 1.0x)"))
        spread = f32["median_ms"] / f32["min_ms"]
        lines.append(check(spread <= 1.2, f"{label} float32 median/min {spread:.2f} (<= 1.2)"))
        if machine["avx512_bf16"]:
            ratio = bf16["median_ms"] / ort["median_ms"]
            lines.append(check(ratio <= 0.6, f"{label} mixed_bfloat16 {ratio:.2f}x ONNX Runtime float32 (<= 0.6x)"))
    return lines


def cap_line(result):
    cap = result.get("max_cpu_isa")
    if cap is None:
        return []
    return [f"Instruction sets capped at {cap} (--max-cpu-isa): onnx-amp with its oneDNN, PyTorch's own kernels and "
            "OpenBLAS; not PyTorch's oneDNN (bfloat16 autocast) nor ONNX Runtime (no such switch)"]


def render(result):
    machine = result["machine"]
    lines = [f"CPU: {machine['cpu']}, {machine['cores']} cores, AVX512_BF16 {'yes' if machine['avx512_bf16'] else 'no'}, "
             f"AVX512_FP16 {'yes' if machine['avx512_fp16'] else 'no'}; {result['threads']} threads; "
             f"load average at start {machine['load_average'][0]:.2f}, at end {os.getloadavg()[0]:.2f}",
             f"command: {result['command']}"] + cap_line(result) + peak_line(result) + [""]
    checks = []
    if "training" in result:
        peak = result.get("peak_gflops") or {}
        lines += training_table(result["training"], peak) + [""]
        checks += training_checks(result["training"], machine, peak)
    if "inference" in result:
        lines += inference_table(result["inference"]) + [""]
        checks += inference_checks(result["inference"], machine)
    return "\n".join(lines + ["Checks (issue 14):"] + checks)
