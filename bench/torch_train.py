"""PyTorch training steps for bench/cpu_bench.py: the same model, batch, optimizer and
thread count as the onnx-amp row it is compared with, in float32 or with bfloat16
autocast (forward and loss under torch.autocast("cpu", torch.bfloat16), backward and
RMSprop outside it, as PyTorch's mixed-precision recipe does).

Prints one JSON line first with the BLAS library the process loaded (and OpenBLAS's
core type when it is OpenBLAS), then one JSON line per step with its milliseconds:
zero_grad + forward + loss + backward + optimizer step, on a batch made beforehand.
"""

import argparse
import ctypes
import json
import sys
import time

import torch

import torch_models


def blas_info():
    """The BLAS library this process mapped and, for OpenBLAS, the kernels it chose."""
    path = ""
    with open("/proc/self/maps") as maps:
        for line in maps:
            name = line.split()[-1]
            if "blas" in name and name.endswith(tuple(".so" + s for s in ("", ".0", ".3"))) or "openblas" in name:
                path = name
                break
    info = {"blas": path}
    if "openblas" in path:
        lib = ctypes.CDLL(path)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        info["openblas_core"] = lib.openblas_get_corename().decode()
    return info


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blas-only", action="store_true", help="print the BLAS line and exit")
    parser.add_argument("--model", choices=("mlp", "cnn"))
    parser.add_argument("--units", type=int, default=4096, help="MLP hidden width")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--precision", choices=("float32", "bf16_autocast"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.blas_only:
        print(json.dumps(blas_info()), flush=True)
        return 0
    if args.model is None or args.batch is None or args.precision is None:
        parser.error("--model, --batch and --precision are required")

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.model == "mlp":
        model = torch_models.Mlp(args.units)
        data = torch.rand(args.batch, 784)
    else:
        model = torch_models.Cnn()
        data = torch.rand(args.batch, 1, 28, 28)
    model.train()
    labels = torch.randint(0, 10, (args.batch,))
    # Keras' RMSprop defaults, as onnx-amp's (README: "Training defaults").
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.9, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    autocast = args.precision == "bf16_autocast"
    print(json.dumps(dict(blas_info(), threads=torch.get_num_threads())), flush=True)
    for step in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(data), labels)
        loss.backward()
        optimizer.step()
        elapsed = (time.perf_counter() - start) * 1e3
        print(json.dumps({"step": step + 1, "step_ms": elapsed, "loss": float(loss)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
