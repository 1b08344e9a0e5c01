"""The ONNX Runtime side of bench/cpu_bench.py's inference rows, speaking the protocol
of cpu_bench_infer: load the model (CPU provider, all graph optimisations, --threads
intra-op threads, one inter-op thread), run once on random inputs (every "batch" dim =
--batch, other symbolic dims = --seq), print "ready", then time one run per line read
on stdin and answer with its milliseconds.
"""

import argparse
import sys
import time

import numpy as np
import onnxruntime as ort

NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
               "tensor(bool)": np.bool_}


def random_feeds(session, batch, seq):
    rng = np.random.default_rng(1)
    feeds = {}
    for value in session.get_inputs():
        shape = [batch if d == "batch" else (seq if isinstance(d, str) or d is None else d) for d in value.shape]
        kind = NUMPY_TYPES.get(value.type)
        if kind is None:
            raise SystemExit(f"ort_worker: input '{value.name}' has unsupported type {value.type}")
        if kind == np.float32:
            feeds[value.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        elif kind == np.bool_:
            feeds[value.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            feeds[value.name] = rng.integers(0, 10, shape).astype(kind)
    return feeds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    feeds = random_feeds(session, args.batch, args.seq)
    session.run(None, feeds)
    print("ready", flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        session.run(None, feeds)
        print(f"{(time.perf_counter() - start) * 1e3:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
