"""The CUDA backend is a library onnx-amp loads only for --device cuda (runtime/exec/cuda_backend.h).

Checks, in a CUDA build: the executable's ELF NEEDED entries name no CUDA library and the
backend's name cudart, cuBLASLt and cuDNN; commands that stay on the CPU never map a CUDA
library (the dynamic linker's own record, LD_DEBUG=files, lists every object it maps,
dlopen included; `--version`, which loads the backend, is the control that shows the record
sees them); --device cuda loads the backend, and a missing, broken or foreign library is an
error that names the path and the reason.

Run: python cuda_backend_test.py --cli PATH/onnx-amp --backend PATH/libonnx_amp_cuda_backend.so --models PATH/models
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None
CUDA_LIBRARY = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|cuda)\.so")
BACKEND_VARIABLE = "ONNX_AMP_CUDA_BACKEND"


def needed_libraries(path):
    """The DT_NEEDED entries of an ELF file, from readelf -d."""
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


def run_cli(*arguments, cli=None, env=None):
    return subprocess.run([cli or ARGS.cli, *arguments], capture_output=True, text=True, timeout=120,
                          env=env)


def without_backend_override():
    env = dict(os.environ)
    env.pop(BACKEND_VARIABLE, None)
    return env


def mapped_libraries(*arguments):
    """(result, names of the shared objects the dynamic linker mapped) for one run of the CLI."""
    with tempfile.TemporaryDirectory() as folder:
        env = without_backend_override()
        env["LD_DEBUG"] = "files"
        env["LD_DEBUG_OUTPUT"] = os.path.join(folder, "ld")
        result = run_cli(*arguments, env=env)
        names = set()
        for record in glob.glob(os.path.join(folder, "ld.*")):
            with open(record, encoding="utf-8", errors="replace") as f:
                names.update(os.path.basename(name) for name in re.findall(r"file=(\S+)\s+\[\d+\];", f.read()))
    return result, names


class CudaBackendTest(unittest.TestCase):
    def test_executable_needs_no_cuda_library(self):
        needed = needed_libraries(ARGS.cli)
        self.assertIn("libstdc++.so.6", needed)  # the parse sees the entries
        self.assertEqual([name for name in needed if CUDA_LIBRARY.match(name)], [])

    def test_backend_needs_cudart_cublaslt_cudnn(self):
        needed = needed_libraries(ARGS.backend)
        for library in ("libcudart.so", "libcublasLt.so", "libcudnn.so"):
            self.assertTrue(any(name.startswith(library) for name in needed), f"{library} not in {needed}")

    def test_backend_is_next_to_the_executable(self):
        self.assertEqual(os.path.dirname(os.path.abspath(ARGS.backend)), os.path.dirname(os.path.abspath(ARGS.cli)))

    def test_loading_the_backend_maps_the_cuda_libraries(self):
        # The control for the test below: the record does show CUDA libraries when they load.
        result, names = mapped_libraries("--version")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("not loadable", result.stdout)
        for library in ("libonnx_amp_cuda_backend.so", "libcudart.so", "libcublasLt.so", "libcudnn.so"):
            self.assertTrue(any(name.startswith(library) for name in names), f"{library} not in {sorted(names)}")

    def test_cpu_commands_never_map_a_cuda_library(self):
        model = os.path.join(ARGS.models, "mlp_u64.onnx")
        with tempfile.TemporaryDirectory() as folder:
            commands = [
                ("--help",),
                ("inspect", model),
                ("convert", model, "-o", os.path.join(folder, "mixed.onnx")),
                ("run", model, "--random", "--dim", "batch=2", "--device", "cpu"),
            ]
            for command in commands:
                with self.subTest(command=command[0]):
                    result, names = mapped_libraries(*command)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertIn("libstdc++.so.6", names)  # the record was read
                    self.assertEqual(sorted(name for name in names if CUDA_LIBRARY.match(name) or
                                            name.startswith("libonnx_amp_cuda_backend")), [])

    def test_device_cuda_loads_the_backend(self):
        # With a GPU the run succeeds; without one the backend loads and the device says why.
        result = run_cli("run", os.path.join(ARGS.models, "mlp_u64.onnx"), "--random", "--dim", "batch=2",
                         "--device", "cuda", env=without_backend_override())
        if result.returncode != 0:
            self.assertEqual(result.returncode, 1)
            self.assertRegex(result.stderr, r"--device cuda: no CUDA device is (usable|visible)")

    def test_missing_backend_is_an_error_naming_the_path(self):
        with tempfile.TemporaryDirectory() as folder:
            cli = shutil.copy(ARGS.cli, folder)
            result = run_cli("run", os.path.join(ARGS.models, "mlp_u64.onnx"), "--random", "--dim", "batch=2",
                             "--device", "cuda", cli=cli, env=without_backend_override())
            self.assertEqual(result.returncode, 1)
            self.assertIn("--device cuda: the CUDA backend library " + os.path.join(folder, "libonnx_amp_cuda_backend.so")
                          + " is missing", result.stderr)
            # --version still names the versions the build was made with.
            version = run_cli("--version", cli=cli, env=without_backend_override())
            self.assertEqual(version.returncode, 0)
            self.assertRegex(version.stdout, r"built with CUDA \d+\.\d+, cuBLASLt [\d.]+, cuDNN [\d.]+; "
                                             r"backend not loadable: .* is missing")

    def test_override_that_is_not_a_library_prints_dlerror(self):
        env = without_backend_override()
        env[BACKEND_VARIABLE] = os.path.join(ARGS.models, "mlp_u64.onnx")
        result = run_cli("run", env[BACKEND_VARIABLE], "--random", "--dim", "batch=2", "--device", "cuda", env=env)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot be loaded: " + env[BACKEND_VARIABLE] + ": ", result.stderr)  # dlerror's text follows
        self.assertIn("ELF", result.stderr)

    def test_override_without_the_entry_point_is_refused(self):
        zlib = next((line.split("=>")[1].split()[0] for line in
                     subprocess.run(["ldd", ARGS.cli], capture_output=True, text=True).stdout.splitlines()
                     if "libz.so" in line and "=>" in line), None)
        self.assertIsNotNone(zlib, "onnx-amp links zlib")
        env = without_backend_override()
        env[BACKEND_VARIABLE] = zlib
        result = run_cli("run", os.path.join(ARGS.models, "mlp_u64.onnx"), "--random", "--dim", "batch=2",
                         "--device", "cuda", env=env)
        self.assertEqual(result.returncode, 1)
        self.assertIn(zlib + " has no entry point onnx_amp_cuda_backend", result.stderr)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
