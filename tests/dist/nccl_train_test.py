"""`mpirun -np N onnx-amp train --device cuda` (NCCL) against one process, on GPUs. Exits 77
(skipped) where `onnx-amp train --device cuda` cannot run (no GPU, or a build without CUDA).

1. N = 1: `mpirun -np 1 ... --device cuda` ends bit-identical to a plain `--device cuda` run
   (no NCCL, the single-process path), and a plain run prints nothing about data parallelism.
2. Where two GPUs are visible: 2 ranks x 32 samples give the weights of 1 rank x 64 after
   K = 3 SGD steps, within the float32 reduction-order bound derived in
   data_parallel_test.step_bound (per step from the same weights, and after the K steps),
   under float32, mixed_float16 and mixed_bfloat16; each rank names its GPU, rank 0 says the
   gradients are summed on the GPUs. With one GPU this part is reported as skipped. The bound
   counts the reduction depth and rounding points of the graphs, not the CPU's kernels: the
   GPU's float32 GEMMs (TF32 off by default) sum the same terms in another order, which it
   allows.

    nccl_train_test.py --cli BUILD/bin/onnx-amp --models models --work DIR"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

import data_parallel_test as dp

SKIPPED = 77


class CudaCli(dp.Cli):
    def train(self, data, *flags):
        return super().train(data, "--device", "cuda", *flags)


def visible_gpus():
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))


def single_rank_equals_plain(cli, work, data):
    common = ["--batch-size", "32", "--policy", "mixed_bfloat16", "--optimizer", "adam", "--max-steps", "6"]
    plain, single = os.path.join(work, "plain"), os.path.join(work, "single")
    out = cli.run(0, data, *common, "--checkpoint-dir", plain)
    dp.check(out.returncode == 0 and "data parallel" not in out.stdout,
             f"a plain --device cuda run trains and says nothing about data parallelism\n{out.stdout[-800:]}")
    done = cli.run(1, data, *common, "--checkpoint-dir", single)
    dp.check(done.returncode == 0 and "rank 0 of 1: GPU 0" in done.stdout,
             f"mpirun -np 1 --device cuda trains on GPU 0\n{done.stdout[-800:]}")
    if out.returncode or done.returncode:
        return
    a, b = dp.weights(os.path.join(plain, "checkpoint.npz")), dp.weights(os.path.join(single, "checkpoint.npz"))
    dp.check(all(a[k].tobytes() == b[k].tobytes() for k in a), "mpirun -np 1 --device cuda == a plain run, bit for bit")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model = os.path.join(args.models, "mlp_u64.onnx")
    cli = CudaCli(args.cli, model, args.work)
    rng = np.random.default_rng(2)
    data = os.path.join(args.work, "long.npz")
    np.savez(data, x=rng.random((256, 784), dtype=np.float32), y=rng.integers(0, 10, 256))
    probe = cli.run(0, data, "--max-steps", "1", "--eval-limit", "1")
    if probe.returncode != 0:
        print(f"skipped: --device cuda cannot run here: {probe.stdout.strip()[-400:]}")
        return SKIPPED
    if shutil.which("mpirun") is None:
        print("mpirun not found: tools/install-deps installs Open MPI", file=sys.stderr)
        return 1

    single_rank_equals_plain(cli, args.work, data)
    gpus = visible_gpus()
    if gpus >= 2:
        import onnx
        from onnx import numpy_helper
        model_weights = {t.name: numpy_helper.to_array(t).astype(np.float64)
                         for t in onnx.load(model).graph.initializer}
        dp.same_weights(cli, args.work, model_weights)
        done = cli.run(2, data, "--batch-size", "32", "--max-steps", "2")
        dp.check("rank 1 of 2: GPU 1 of" in done.stdout and "gradients summed in float32 on the GPUs" in done.stdout,
                 f"each rank names its GPU; rank 0 says the gradients are summed on the GPUs\n{done.stdout[-800:]}")
    else:
        print(f"skip  2 ranks vs 1 rank on GPUs: {gpus} GPU(s) visible, 2 needed")
    print(f"{len(dp.failures)} failed" if dp.failures else "all NCCL data-parallel checks passed")
    return 1 if dp.failures else 0


if __name__ == "__main__":
    sys.exit(main())
