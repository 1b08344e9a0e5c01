"""The ONNX backend test models that ONNX Runtime executes in float32 still run after
`onnx-amp convert`, and stay within the dtype-derived tolerance of the float32 outputs.

For every floating-point model (a main-graph input, output or initializer of a float
type, as in backend_suite_test.cc) that passes the ONNX checker and whose tensor inputs
of test_data_set_0 run in ONNX Runtime and reproduce the expected outputs, the model is
converted with the CLI under each policy of POLICIES and run on the same inputs twice:
as ONNX Runtime runs it ("native"), and emulated: a float32 model computing what the
converted one computes under our numeric contract (each low node reads low-precision
values, computes in float32 and rounds its outputs once; Cast to and from the low dtype
does the rounding, as ORT has those Casts). The emulation is needed because ORT's CPU
provider has no bfloat16 arithmetic kernels, and runs a float16 node it has no kernel
for in float32 after dropping the Casts around it, so only the emulation keeps every
rounding. Both runs must stay within tolerance; a model ORT runs neither way is
skipped by ORT and listed with its message.

Tolerance (runtime/validate/tolerance_rule.h, re-expressed): an output reached through a
path of d low-precision nodes of unit roundoff u gets rtol = 2u(d + 1) and atol = rtol *
max|reference|; one computed all in float32 gets u = 2^-24 and d counting every node.
Integer and bool outputs must be equal. A mismatch beyond the rule fails the test unless
ALLOWED_MISMATCHES explains it.

Run: python backend_ort_test.py --cli PATH/onnx-amp --data ONNX_BACKEND_TEST_DATA
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from ort_emulation import LOW_TYPES, emulate, value_types

ARGS = None
SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator"]
POLICIES = ["mixed_float16", "mixed_bfloat16", "float16", "bfloat16"]
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
# Unit roundoff 2^-p of each float type (p significand bits).
UNIT_ROUNDOFF = {onnx.TensorProto.FLOAT: 2.0 ** -24, onnx.TensorProto.FLOAT16: 2.0 ** -11,
                 onnx.TensorProto.BFLOAT16: 2.0 ** -8}
# The ONNX backend runner's default tolerance for a backend against the expected outputs.
EXPECTED_RTOL, EXPECTED_ATOL = 1e-3, 1e-7

# Fewer models running in ORT float32 means the test data or ORT changed.
MIN_CANDIDATES = 800

# (model, policy) -> why its outputs may leave the tolerance rule.
# Each is an op that amplifies one rounding beyond the per-node rule, converted only by
# the all-low policies: the mixed policies keep these ops float32 and pass.
ALLOWED_MISMATCHES = {
    ("test_tan", "float16"):
        "tan near pi/2 (x = 1.5328, tan x = 26.3) has condition number x(1 + tan^2 x)/tan x = 40: "
        "the float16 rounding of x moves the result 40 roundoffs",
    ("test_dynamicquantizelinear_expanded", "float16"):
        "x / scale is -127.5 exactly, a tie of the integer rounding; the float16 scale moves it across "
        "the tie, so one uint8 value differs by one quantization step",
    ("test_reduce_prod_default_axes_keepdims_example", "float16"):
        "the product of 1..12 is 12! = 4.8e8, beyond float16's largest finite 65504: it overflows to inf",
}
# These models are at opsets below 22, where Tan and Round admit no bfloat16: the plain
# bfloat16 policy converts them once the converter raises the opset.
ALLOWED_MISMATCHES[("test_tan", "bfloat16")] = (
    "tan near pi/2 (x = 1.5328, tan x = 26.3) has condition number x(1 + tan^2 x)/tan x = 40: "
    "the bfloat16 rounding of x moves the result 40 roundoffs")
for _variant in ("", "_max_adjusted", "_min_adjusted"):
    ALLOWED_MISMATCHES[(f"test_dynamicquantizelinear{_variant}_expanded", "bfloat16")] = (
        "bfloat16 keeps 8 significant bits: the scale (max - min) / 255 rounds by up to 2^-9 of itself, which "
        "moves x / scale near 255 by up to half a step, and x / scale rounds to bfloat16's spacing of 1 in "
        "[128, 256): uint8 values and the zero point differ by one quantization step")
for _policy, _spacing in (("float16", 8), ("bfloat16", 64)):
    for _op in ("softmax", "logsoftmax"):
        ALLOWED_MISMATCHES[(f"test_{_op}_large_number_expanded", _policy)] = (
            f"{_policy} numbers near 10000 are {_spacing} apart, so the inputs 10000..10003 round together "
            f"and x - max(x) loses the differences the {_op} depends on (cancellation)")


def is_floating_point(model):
    graph = model.graph
    values = list(graph.input) + list(graph.output)
    return any(v.type.HasField("tensor_type") and v.type.tensor_type.elem_type in FLOAT_TYPES for v in values) or \
        any(t.data_type in FLOAT_TYPES for t in graph.initializer)


def model_folders():
    for suite in SUITES:
        root = os.path.join(ARGS.data, suite)
        for name in sorted(os.listdir(root)):
            if os.path.isfile(os.path.join(root, name, "model.onnx")):
                yield suite, name, os.path.join(root, name)


def read_tensors(folder, prefix):
    """The tensors input_K.pb / output_K.pb in K order; None when one is not a tensor."""
    files = sorted((f for f in os.listdir(folder) if f.startswith(prefix) and f.endswith(".pb")),
                   key=lambda f: int(f[len(prefix):-3]))
    tensors = []
    for file_name in files:
        tensor = onnx.TensorProto()
        with open(os.path.join(folder, file_name), "rb") as f:
            try:
                tensor.ParseFromString(f.read())
                tensors.append(numpy_helper.to_array(tensor))
            except Exception:  # a SequenceProto or OptionalProto: not a tensor
                return None
    return tensors


def has_tensor_io(model):
    return all(v.type.HasField("tensor_type") for v in list(model.graph.input) + list(model.graph.output))


def session(model_bytes):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    # Graph optimizations could fold or fuse away the roundings under test.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def run(model_bytes, inputs):
    sess = session(model_bytes)
    # Copies: ORT may write into a feed (a converted BatchNormalization in training mode
    # updates its running mean in the caller's array once ORT drops the Casts around it).
    # The emulation declares float16 graph inputs float32: widen (exactly) what they get.
    feeds = {i.name: value.astype(np.float32) if i.type == "tensor(float)" and value.dtype == np.float16
             else value.copy() for i, value in zip(sess.get_inputs(), inputs)}
    return sess.run(None, feeds)


def close_to_expected(outputs, expected):
    if len(outputs) != len(expected):
        return False
    for got, want in zip(outputs, expected):
        if got.shape != want.shape:
            return False
        if want.dtype.kind in "fc":
            if not np.allclose(got, want, rtol=EXPECTED_RTOL, atol=EXPECTED_ATOL, equal_nan=True):
                return False
        elif not np.array_equal(got, want):
            return False
    return True


def lower_precision(a, b):
    return a if UNIT_ROUNDOFF[a] >= UNIT_ROUNDOFF[b] else b


def output_tolerances(converted, types):
    """rtol of each main-graph output by the rule of runtime/validate/tolerance_rule.h."""
    paths = {}  # value -> (depth, float32_depth, lowest)
    graph = converted.graph
    for v in list(graph.input) + list(graph.initializer):
        elem = types.get(v.name, onnx.TensorProto.FLOAT)
        paths[v.name] = (0, 0, elem if elem in LOW_TYPES else onnx.TensorProto.FLOAT)
    for node in graph.node:  # the checker requires topological order
        depth, float32_depth, lowest = 0, 0, onnx.TensorProto.FLOAT
        for name in node.input:
            if name in paths:
                d, fd, low = paths[name]
                depth, float32_depth, lowest = max(depth, d), max(float32_depth, fd), lower_precision(lowest, low)
        low = onnx.TensorProto.FLOAT
        for name in node.output:
            if types.get(name) in LOW_TYPES:
                low = lower_precision(low, types[name])
        float32_depth += 1
        if low in LOW_TYPES:
            depth += 1
            lowest = lower_precision(lowest, low)
        for name in node.output:
            paths[name] = (depth, float32_depth, lowest)
    rtols = []
    for output in graph.output:
        depth, float32_depth, lowest = paths.get(output.name, (0, 0, onnx.TensorProto.FLOAT))
        if lowest in LOW_TYPES:
            rtols.append(2.0 * UNIT_ROUNDOFF[lowest] * (depth + 1))
        else:
            rtols.append(2.0 * UNIT_ROUNDOFF[onnx.TensorProto.FLOAT] * (float32_depth + 1))
    return rtols


def compare(reference, candidate, rtol):
    """'' when candidate is within the rule's tolerance of reference, else what differs."""
    if reference.shape != candidate.shape:
        return f"shape {candidate.shape} instead of {reference.shape}"
    if reference.dtype.kind not in "fc":
        return "" if np.array_equal(reference, candidate) else \
            f"{int(np.sum(reference != candidate))} of {reference.size} {reference.dtype} values differ"
    r = reference.astype(np.float64)
    c = candidate.astype(np.float64)
    finite = np.isfinite(r) & np.isfinite(c)
    same_non_finite = ~np.isfinite(r) & ~np.isfinite(c) & ((np.isnan(r) & np.isnan(c)) | (r == c))
    max_abs = float(np.max(np.abs(r[np.isfinite(r)]))) if np.any(np.isfinite(r)) else 0.0
    atol = rtol * max_abs
    error = np.abs(c - r)
    violations = (finite & (error > atol + rtol * np.abs(r))) | (~finite & ~same_non_finite)
    if not np.any(violations):
        return ""
    worst = float(np.max(np.where(finite, error / (atol + rtol * np.abs(r) + 1e-300), 0.0)))
    return (f"{int(np.sum(violations))} of {r.size} values beyond rtol {rtol:.3g}, atol {atol:.3g} "
            f"(worst {worst:.3g}x the allowance, {int(np.sum(~finite & ~same_non_finite))} non-finite mismatches)")


def run_both_ways(converted, inputs):
    """Outputs of the converted model as ORT runs it ("native") and of its emulation
    ("emulated"), with the error of each way ORT refused. Both are checked: ORT runs a
    float16 node it has no kernel for in float32 and drops the Casts around it, so only
    the emulation reproduces every rounding of our numeric contract."""
    outputs, errors = {}, {}
    for how, build in (("native", lambda: converted), ("emulated", lambda: emulate(converted))):
        try:
            outputs[how] = run(build().SerializeToString(), inputs)
        except Exception as error:  # ORT refuses it (NOT_IMPLEMENTED, an invalid Cast it inserted)
            errors[how] = first_line(error)
    return outputs, errors


def convert(cli, model_path, out_path, policy):
    report_path = out_path + ".json"
    result = subprocess.run([cli, "convert", model_path, "-o", out_path, "--policy", policy, "--report", report_path],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return None, result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.returncode}"
    with open(report_path, encoding="utf-8") as f:
        return json.load(f), ""


class Candidate:
    def __init__(self, suite, name, folder, inputs, reference):
        self.suite, self.name, self.folder = suite, name, folder
        self.inputs, self.reference = inputs, reference


def find_candidates():
    """Floating-point models whose float32 run in ORT matches test_data_set_0."""
    candidates = []
    excluded = {"not floating-point": 0, "the float32 model fails the ONNX checker": 0, "non-tensor test data": 0,
                "ORT cannot run the float32 model": 0, "ORT float32 differs from the expected outputs": 0}
    for suite, name, folder in model_folders():
        model_path = os.path.join(folder, "model.onnx")
        model = onnx.load(model_path)
        if not is_floating_point(model):
            excluded["not floating-point"] += 1
            continue
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception:  # the converter refuses it; backend_suite_test.cc lists why
            excluded["the float32 model fails the ONNX checker"] += 1
            continue
        data = os.path.join(folder, "test_data_set_0")
        if not has_tensor_io(model) or not os.path.isdir(data):
            excluded["non-tensor test data"] += 1
            continue
        inputs = read_tensors(data, "input_")
        expected = read_tensors(data, "output_")
        if inputs is None or expected is None:
            excluded["non-tensor test data"] += 1
            continue
        try:
            with open(model_path, "rb") as f:
                reference = run(f.read(), inputs)
        except Exception:  # ORT refuses it: an old opset, an op it lacks, a non-tensor value
            excluded["ORT cannot run the float32 model"] += 1
            continue
        if not close_to_expected(reference, expected):
            excluded["ORT float32 differs from the expected outputs"] += 1
            continue
        candidates.append(Candidate(suite, name, folder, inputs, reference))
    return candidates, excluded


def first_line(message):
    return str(message).strip().splitlines()[0][:300]


class BackendOrtTest(unittest.TestCase):
    def test_converted_backend_models_match_float32_in_ort(self):
        candidates, excluded = find_candidates()
        print(f"{len(candidates)} backend models run in ORT float32 and match their expected outputs; excluded: "
              + ", ".join(f"{count} {why}" for why, count in excluded.items()))
        self.assertGreaterEqual(len(candidates), MIN_CANDIDATES,
                                "too few backend models run in ORT: is the test data complete?")
        failures = []
        used_allowances = set()
        with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(ARGS.jobs) as pool:
            for policy in POLICIES:
                jobs = []
                for k, candidate in enumerate(candidates):
                    out = os.path.join(tmp, f"{policy}_{k}.onnx")
                    jobs.append((candidate, out, pool.submit(
                        convert, ARGS.cli, os.path.join(candidate.folder, "model.onnx"), out, policy)))
                counts = {"native": 0, "emulated": 0, "no low node": 0, "allowed": 0}
                ran = 0
                skipped_by_ort = []
                for candidate, out, job in jobs:
                    label = f"{candidate.suite}/{candidate.name} [{policy}]"
                    report, error = job.result()
                    if report is None:
                        failures.append(f"{label}: conversion failed: {error}")
                        continue
                    converted = onnx.load(out)
                    outputs, errors = run_both_ways(converted, candidate.inputs)
                    if not outputs:
                        skipped_by_ort.append(f"{label}: native: {errors['native']}; emulated: {errors['emulated']}")
                        continue
                    ran += 1
                    for how in outputs:
                        counts[how] += 1
                    if report["converted_nodes"] == 0:
                        counts["no low node"] += 1
                    types = value_types(onnx.shape_inference.infer_shapes(converted, strict_mode=True))
                    rtols = output_tolerances(converted, types)
                    problems = [f"{how} output {o.name}: {problem}" for how, got in outputs.items()
                                for o, want, have, rtol in zip(converted.graph.output, candidate.reference, got, rtols)
                                if (problem := compare(want, have, rtol))]
                    if not problems:
                        continue
                    reason = ALLOWED_MISMATCHES.get((candidate.name, policy))
                    if reason:
                        used_allowances.add((candidate.name, policy))
                        counts["allowed"] += 1
                        print(f"  allowed mismatch {label}: {reason}: {'; '.join(problems)}")
                    else:
                        failures.append(f"{label}: {'; '.join(problems)}")
                print(f"[{policy}] {len(candidates)} models: {ran} ran in ORT ({counts['native']} natively, "
                      f"{counts['emulated']} emulated; {counts['no low node']} with no low-precision node), "
                      f"{len(skipped_by_ort)} skipped by ORT, {counts['allowed']} allowed mismatches")
                for line in skipped_by_ort:
                    print(f"  skipped by ORT {line}")
        names = {c.name for c in candidates}
        for name, policy in sorted(set(ALLOWED_MISMATCHES) - used_allowances):
            if name in names and policy in POLICIES:
                failures.append(f"{name} [{policy}]: allowed to mismatch but now within tolerance: "
                                "remove it from ALLOWED_MISMATCHES")
        for failure in failures:
            print(f"  FAIL {failure}")
        self.assertEqual(failures, [], f"{len(failures)} converted backend models failed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--data", required=True, help="the ONNX backend test data folder")
    parser.add_argument("--jobs", type=int, default=2, help="conversions run in parallel")
    ARGS, rest = parser.parse_known_args()
    ort.set_default_logger_severity(4)  # refusals are counted and listed, not logged
    unittest.main(argv=[sys.argv[0], *rest])
