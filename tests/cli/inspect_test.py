"""End-to-end tests of `onnx-amp` (--help, --version, inspect) and its error handling.

Run: python inspect_test.py --cli PATH/onnx-amp --models PATH/models --cuda ON|OFF
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ARGS = None


def run_cli(*arguments, env=None):
    return subprocess.run([ARGS.cli, *arguments], capture_output=True, text=True, timeout=120, env=env)


def cpu_flags():
    """The first processor's flags in /proc/cpuinfo."""
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def bundled_models():
    """(model path, expected dict) for every models/<name>.onnx with a <name>.expected.json."""
    pairs = []
    for expected_path in sorted(glob.glob(os.path.join(ARGS.models, "*.expected.json"))):
        model_path = expected_path[: -len(".expected.json")] + ".onnx"
        if os.path.exists(model_path):
            with open(expected_path, encoding="utf-8") as f:
                pairs.append((model_path, json.load(f)))
    return pairs


def save_unchecked(graph, path, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)


def float_input(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def control_flow_model():
    """Main graph with an If and a Loop whose body holds another If (3 levels of graphs)."""
    def branch(name, op, source):
        return helper.make_graph([helper.make_node(op, [source], [name + "_out"], name=name + "_node")], name,
                                 [], [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, None)])

    inner_if = helper.make_node("If", ["cond_in"], ["acc_out"], name="inner_if",
                                then_branch=branch("inner_then", "Neg", "a"),
                                else_branch=branch("inner_else", "Abs", "acc_in"))
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"), inner_if], "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("If", ["cond"], ["picked"], name="outer_if",
                         then_branch=branch("outer_then", "Neg", "a"),
                         else_branch=branch("outer_else", "Abs", "x")),
        helper.make_node("Loop", ["trips", "cond", "picked"], ["result"], name="loop", body=body),
    ]
    graph = helper.make_graph(
        nodes, "control_flow",
        [float_input("x", [2]), helper.make_tensor_value_info("trips", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("result", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.ones([2], dtype=np.float16), "unused_half")])
    return graph


def count_subgraphs(graph):
    """Graphs nested in `graph` at any depth, counted by walking the protobuf."""
    count = 0
    for node in graph.node:
        for attribute in node.attribute:
            nested = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
            for subgraph in nested:
                count += 1 + count_subgraphs(subgraph)
    return count


class BundledModelsTest(unittest.TestCase):
    def test_json_matches_expected_counts(self):
        pairs = bundled_models()
        self.assertTrue(pairs, "no models/*.expected.json with a matching .onnx in " + ARGS.models)
        for model_path, expected in pairs:
            with self.subTest(model=os.path.basename(model_path)):
                result = run_cli("inspect", "--json", model_path)
                self.assertEqual(result.returncode, 0, result.stderr)
                summary = json.loads(result.stdout)
                for key, value in expected.items():
                    self.assertIn(key, summary)
                    self.assertEqual(summary[key], value, "key " + key)

    def test_text_names_every_op_with_its_count(self):
        pairs = bundled_models()
        self.assertTrue(pairs)
        for model_path, expected in pairs:
            with self.subTest(model=os.path.basename(model_path)):
                result = run_cli("inspect", model_path)
                self.assertEqual(result.returncode, 0, result.stderr)
                for op_type, count in expected["node_counts"].items():
                    self.assertRegex(result.stdout, r"(?m)^\s+%s\s+%d$" % (re.escape(op_type), count))
                self.assertIn("Nodes (%d in the main graph" % expected["num_nodes"], result.stdout)
                for entry in expected["inputs"]:
                    self.assertIn(entry["name"] + ": " + entry["dtype"], result.stdout)


class GeneratedModelsTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.folder.cleanup()

    def test_subgraphs_at_every_depth(self):
        path = os.path.join(self.folder.name, "control_flow.onnx")
        graph = control_flow_model()
        save_unchecked(graph, path)
        result = run_cli("inspect", "--json", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        summary = json.loads(result.stdout)
        self.assertEqual(summary["subgraphs"], count_subgraphs(graph))
        self.assertEqual(summary["subgraphs"], 5)
        self.assertEqual(summary["num_nodes"], 3)
        self.assertEqual(summary["node_counts"], {"If": 1, "Loop": 1, "Relu": 1})
        self.assertEqual(summary["parameters"], {"float16": 2})
        self.assertEqual(summary["parameter_bytes"], {"float16": 4})
        self.assertEqual(summary["inputs"][1], {"name": "trips", "dtype": "int64", "shape": []})
        self.assertEqual(summary["outputs"], [{"name": "result", "dtype": "float", "shape": [2]}])
        by_node = {entry["node"]: entry for entry in summary["control_flow"]}
        self.assertEqual(sorted(by_node), ["inner_if", "loop", "outer_if"])
        # Subgraphs are listed in attribute order; onnx.helper sorts attributes by name.
        self.assertEqual(by_node["outer_if"]["subgraphs"],
                         [{"attribute": "else_branch", "name": "outer_else", "num_nodes": 1},
                          {"attribute": "then_branch", "name": "outer_then", "num_nodes": 1}])
        self.assertEqual(by_node["loop"]["subgraphs"],
                         [{"attribute": "body", "name": "loop_body", "num_nodes": 2}])
        self.assertEqual(by_node["inner_if"]["scope"], "control_flow/loop.body")

        text = run_cli("inspect", path)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("Subgraphs: 5", text.stdout)
        self.assertIn("'loop' (Loop) in control_flow: body 'loop_body' (2 nodes)", text.stdout)

    def assert_fails(self, path, *fragments, exit_codes=(1,)):
        result = run_cli("inspect", path)
        self.assertIn(result.returncode, exit_codes, "stdout: %s\nstderr: %s" % (result.stdout, result.stderr))
        self.assertTrue(result.stderr.startswith("onnx-amp: error: "), result.stderr)
        for fragment in fragments:
            self.assertIn(fragment, result.stderr)
        return result.stderr

    def write_bytes(self, name, data):
        path = os.path.join(self.folder.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_empty_file(self):
        path = self.write_bytes("empty.onnx", b"")
        self.assert_fails(path, path)

    def test_random_bytes(self):
        rng = np.random.default_rng(7)
        path = self.write_bytes("random.onnx", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
        self.assert_fails(path, path)

    def test_truncated_model(self):
        pairs = bundled_models()
        if pairs:
            with open(pairs[0][0], "rb") as f:
                data = f.read()
        else:
            data = helper.make_model(control_flow_model()).SerializeToString()
        path = self.write_bytes("truncated.onnx", data[: len(data) // 2])
        self.assert_fails(path, path)

    def test_missing_file(self):
        path = os.path.join(self.folder.name, "does_not_exist.onnx")
        self.assert_fails(path, path)

    def test_folder_instead_of_file(self):
        # A folder is a wrong argument value rather than a bad model: either code is fair.
        self.assert_fails(self.folder.name, self.folder.name, exit_codes=(1, 2))

    def test_node_reading_undefined_value(self):
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"], name="fine"),
             helper.make_node("Add", ["y", "ghost"], ["z"], name="reads_ghost")],
            "undefined", [float_input("x", [2])], [float_input("z", [2])])
        path = os.path.join(self.folder.name, "undefined.onnx")
        save_unchecked(graph, path)
        self.assert_fails(path, path, "reads_ghost", "ghost")

    def test_cycle(self):
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["a"], name="entry"),
             helper.make_node("Add", ["a", "c"], ["b"], name="cycle_left"),
             helper.make_node("Neg", ["b"], ["c"], name="cycle_right")],
            "cyclic", [float_input("x", [2])], [float_input("c", [2])])
        path = os.path.join(self.folder.name, "cycle.onnx")
        save_unchecked(graph, path)
        self.assert_fails(path, path, "cycle", "cycle_left", "cycle_right")


class UsageTest(unittest.TestCase):
    def test_help_lists_inspect(self):
        result = run_cli("--help")
        self.assertEqual(result.returncode, 0)
        self.assertRegex(result.stdout, r"(?m)^\s+inspect\s")

    def test_inspect_help(self):
        result = run_cli("inspect", "--help")
        self.assertEqual(result.returncode, 0)
        self.assertIn("--json", result.stdout)

    def test_version_says_whether_cuda_is_compiled_in(self):
        result = run_cli("--version")
        self.assertEqual(result.returncode, 0)
        lines = result.stdout.strip().splitlines()
        cuda = "compiled in" if ARGS.cuda else "not compiled in"
        self.assertRegex(lines[0], r"^onnx-amp \d+\.\d+\.\d+ \(CUDA support: %s\)$" % cuda)
        # The CPU's bfloat16 kernel choice (ops/common/bf16_kernel_choice.h).
        self.assertRegex(lines[1], r"^CPU: bfloat16 products \(ONNX_AMP_BF16_KERNELS=(auto|native|float32)\): (native|float32) kernels")
        # The few-rows kernels (ops/common/few_rows_matmul.h) and the first-layer loops
        # (ops/conv/few_channels_conv.h): the widest the CPU's flags allow.
        flags = cpu_flags()
        if {"avx512f", "avx512bw", "avx512vl", "avx2", "fma", "f16c"} <= flags:
            path = "avx512 kernels streaming the weights once"
            first_layers = ("avx512 loops for float16 and bfloat16 (up to 27 weights a map), and for float32 where"
                            " they pool the output; oneDNN's kernels for other float32 ones")
        elif {"avx2", "fma", "f16c"} <= flags:
            path = "avx2 kernels streaming the weights once"
            first_layers = "avx2 loops for float32, float16 and bfloat16 (up to 12 weights a map)"
        else:
            path = "oneDNN's kernels (no AVX2 with FMA and F16C)"
            first_layers = path
        self.assertEqual(lines[2], "CPU: products of at most 4 rows: " + path)
        self.assertEqual(lines[3], "CPU: first layers of 1 to 4 channels: " + first_layers)
        # The few-pixels convolutions (ops/conv/few_pixels_conv.h): bfloat16 on VDPBF16PS
        # as the measured rate decides, never without AVX512_BF16.
        pixels = "CPU: convolutions of at most 16 output pixels or 2000000 multiply-adds: "
        if {"avx512f", "avx512bw", "avx512vl", "avx2", "fma", "f16c"} <= flags:
            self.assertRegex(lines[4], r"^%savx512 kernel streaming the weights once, bfloat16 (on VDPBF16PS|"
                                       r"on VDPBF16PS below 16 pixels|widened to float32)$" % pixels)
            if "avx512_bf16" not in flags:
                self.assertTrue(lines[4].endswith("widened to float32"), lines[4])
        elif {"avx2", "fma", "f16c"} <= flags:
            self.assertEqual(lines[4], pixels + "avx2 kernel streaming the weights once, bfloat16 widened to float32")
        else:
            self.assertEqual(lines[4], pixels + "oneDNN's kernels (no AVX2 with FMA and F16C)")
        # The Winograd convolutions (ops/conv/winograd_choice.h): oneDNN has them on AVX-512.
        winograd = ("oneDNN's Winograd kernels (ONNX_AMP_CONV_WINOGRAD=0 turns them off)"
                    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
                    else "direct kernels (oneDNN has no Winograd kernels on this CPU)")
        self.assertEqual(lines[5], "CPU: 3x3 stride-1 convolutions of 64+ channels: " + winograd)
        # The clone of the element-wise loops the loader picks (ops/common/cpu_clones.h):
        # AVX-512, else x86-64-v3 (AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE), else the baseline.
        loops = "CPU: element-wise, softmax and normalisation loops: "
        if "avx512f" in flags:
            self.assertEqual(lines[6], loops + "avx512 clone")
        elif {"avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe"} <= flags:
            self.assertEqual(lines[6], loops + "x86-64-v3 clone (AVX2 with FMA)")
        else:
            self.assertTrue(lines[6].startswith(loops + "baseline x86-64 clone"), lines[6])
        # A value that is neither 0 nor 1 is named, not taken silently.
        bad = run_cli("--version", env=dict(os.environ, ONNX_AMP_CONV_WINOGRAD="off"))
        self.assertEqual(bad.returncode, 0)
        self.assertIn("onnx-amp: ONNX_AMP_CONV_WINOGRAD='off' is not 0 or 1; using 1", bad.stderr)
        off = run_cli("--version", env=dict(os.environ, ONNX_AMP_CONV_WINOGRAD="0"))
        if winograd.startswith("oneDNN"):
            self.assertIn("CPU: 3x3 stride-1 convolutions of 64+ channels: direct kernels (ONNX_AMP_CONV_WINOGRAD=0)",
                          off.stdout)
        if ARGS.cuda:
            # The libraries loaded, then those the build was compiled against.
            version = r"\d+\.\d+(\.\d+)?"
            self.assertRegex(lines[7], r"^CUDA runtime (%s|unavailable), cuBLASLt %s, cuDNN %s \(built with CUDA %s, "
                                       r"cuBLASLt %s, cuDNN %s\)$" % ((version,) * 6))
        else:
            self.assertEqual(len(lines), 7)

    def test_version_names_the_instruction_set_cap_and_rejects_unknown_ones(self):
        # ONNX_AMP_MAX_CPU_ISA (runtime/core/cpu_isa_cap.h) caps our kernels' paths and oneDNN's.
        def version(value, **extra):
            result = run_cli("--version", env=dict(os.environ, ONNX_AMP_MAX_CPU_ISA=value, **extra))
            self.assertEqual(result.returncode, 0)
            return result
        baseline = version("baseline").stdout
        self.assertIn("CPU: products of at most 4 rows: oneDNN's kernels (no AVX2 with FMA and F16C)", baseline)
        self.assertIn("CPU: first layers of 1 to 4 channels: oneDNN's kernels (no AVX2 with FMA and F16C)", baseline)
        self.assertIn("(no AVX512_BF16)", baseline)
        self.assertIn("CPU: 3x3 stride-1 convolutions of 64+ channels: direct kernels", baseline)
        self.assertIn("CPU: convolutions of at most 16 output pixels or 2000000 multiply-adds: oneDNN's kernels "
                      "(no AVX2 with FMA and F16C)", baseline)
        self.assertIn("CPU: ONNX_AMP_MAX_CPU_ISA=baseline: our kernels capped at baseline, oneDNN's at baseline too",
                      baseline)
        if {"avx2", "fma", "f16c"} <= cpu_flags():
            avx2 = version("AVX2").stdout
            self.assertIn("CPU: products of at most 4 rows: avx2 kernels streaming the weights once", avx2)
            self.assertIn("CPU: first layers of 1 to 4 channels: avx2 loops", avx2)
            self.assertIn("CPU: ONNX_AMP_MAX_CPU_ISA=avx2: our kernels capped at avx2, oneDNN's at avx2 too", avx2)
            self.assertIn("CPU: convolutions of at most 16 output pixels or 2000000 multiply-adds: avx2 kernel "
                          "streaming the weights once, bfloat16 widened to float32", avx2)
        if {"avx512f", "avx512bw", "avx512vl", "avx2", "fma", "f16c"} <= cpu_flags():
            # Held below AVX512_BF16, bfloat16 is widened even where the CPU has the instruction.
            self.assertIn("CPU: convolutions of at most 16 output pixels or 2000000 multiply-adds: avx512 kernel "
                          "streaming the weights once, bfloat16 widened to float32", version("avx512").stdout)
        own = version("avx2", ONEDNN_MAX_CPU_ISA="AVX512_CORE").stdout
        self.assertIn("oneDNN's by ONEDNN_MAX_CPU_ISA=AVX512_CORE", own)
        bad = version("avx9")
        self.assertIn("onnx-amp: ONNX_AMP_MAX_CPU_ISA='avx9' is not avx512_bf16, avx512, avx2 or baseline; no cap",
                      bad.stderr)
        self.assertNotIn("ONNX_AMP_MAX_CPU_ISA=", bad.stdout)

    def test_version_names_a_forced_bfloat16_kernel_choice_and_rejects_others(self):
        env = dict(os.environ, ONNX_AMP_BF16_KERNELS="float32")
        result = run_cli("--version", env=env)
        self.assertEqual(result.returncode, 0)
        self.assertIn("CPU: bfloat16 products (ONNX_AMP_BF16_KERNELS=float32): float32 kernels on widened operands",
                      result.stdout)
        env["ONNX_AMP_BF16_KERNELS"] = "fast"
        result = run_cli("--version", env=env)
        self.assertEqual(result.returncode, 0)
        self.assertIn("ONNX_AMP_BF16_KERNELS='fast' is not auto, native or float32; using auto", result.stderr)

    def test_unknown_flag(self):
        result = run_cli("inspect", "--no-such-flag", os.devnull)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--no-such-flag", result.stderr)

    def test_missing_model_argument(self):
        result = run_cli("inspect")
        self.assertEqual(result.returncode, 2)
        self.assertIn("MODEL", result.stderr)

    def test_unknown_subcommand(self):
        result = run_cli("transmogrify")
        self.assertEqual(result.returncode, 2)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--cuda", required=True, help="whether the build has CUDA (ON/OFF/1/0)")
    ARGS, rest = parser.parse_known_args()
    ARGS.cuda = ARGS.cuda.upper() in ("ON", "1", "TRUE", "YES")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
