"""Writes the seed corpora of the fuzz targets into OUT/<target>/.

Models come from the bundled models and the ONNX backend test data (node, simple,
pytorch-converted suites); the model loader also gets models with external data in
weights.bin (the file its fuzz target puts beside the model). Tensor files are written
with NumPy and onnx.numpy_helper. --max-per-target keeps the first N of each target
(a short smoke run needs only a few)."""
import argparse
import gzip
import io
import pathlib
import random
import struct
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

SMALL_MODEL_BYTES = 64 * 1024  # larger backend models slow every mutation down


def backend_models(data_dir):
    for suite in ("node", "simple", "pytorch-converted", "pytorch-operator"):
        for path in sorted((data_dir / suite).glob("*/model.onnx")):
            if path.stat().st_size <= SMALL_MODEL_BYTES:
                yield path.parent.name, path.read_bytes()


def bundled_models(models_dir):
    for path in sorted(models_dir.glob("*.onnx")):
        if path.stat().st_size <= 4 * SMALL_MODEL_BYTES:
            yield path.stem, path.read_bytes()


def external_data_models():
    """Models whose initializers live in weights.bin (4096 bytes), at several offsets."""
    for name, offset, length, location in (("ext_whole", 0, 4096, "weights.bin"),
                                           ("ext_offset", 1024, 64, "weights.bin"),
                                           ("ext_nolength", 4032, None, "weights.bin"),
                                           ("ext_subfolder", 0, 16, "sub/../weights.bin")):
        count = (length if length is not None else 4096 - offset) // 4
        weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[count])
        weight.data_location = TensorProto.EXTERNAL
        entries = {"location": location, "offset": str(offset)}
        if length is not None:
            entries["length"] = str(length)
        for key, value in entries.items():
            weight.external_data.add(key=key, value=value)
        node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
        graph = helper.make_graph([node], "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [count])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [count])], [weight])
        yield name, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def npy_bytes(array, version=None):
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array)
    else:
        np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def sample_arrays():
    rng = np.random.default_rng(0)
    yield "f32", rng.standard_normal((2, 3)).astype(np.float32)
    yield "f16", rng.standard_normal((4,)).astype(np.float16)
    yield "f64_scalar", np.array(1.5)
    yield "i8", np.arange(-3, 3, dtype=np.int8)
    yield "u16", np.arange(6, dtype=np.uint16).reshape(2, 3)
    yield "i64", np.arange(4, dtype=np.int64).reshape(1, 4, 1)
    yield "bool", np.array([True, False, True])
    yield "empty", np.zeros((0, 3), dtype=np.float32)


def npy_seeds():
    for name, array in sample_arrays():
        yield name, npy_bytes(array)
    yield "v2", npy_bytes(np.ones((2, 2), np.float32), version=(2, 0))
    yield "v3", npy_bytes(np.ones((3,), np.int32), version=(3, 0))


def npz_seeds():
    arrays = dict(sample_arrays())
    for compressed in (False, True):
        buffer = io.BytesIO()
        (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
        yield "compressed" if compressed else "stored", buffer.getvalue()
    buffer = io.BytesIO()
    np.savez(buffer, x=np.ones((2, 2), np.float32))
    yield "single", buffer.getvalue()


def tensor_proto_seeds(data_dir):
    for name, array in sample_arrays():
        yield "raw_" + name, numpy_helper.from_array(array, name).SerializeToString()
    yield "typed_float", helper.make_tensor("t", TensorProto.FLOAT, [2], [1.0, 2.0]).SerializeToString()
    halves = np.array([1, 2], np.float16)
    yield "typed_f16", helper.make_tensor("t", TensorProto.FLOAT16, [2], halves).SerializeToString()
    yield "typed_bf16", helper.make_tensor("t", TensorProto.BFLOAT16, [1], [1.0]).SerializeToString()
    yield "typed_u64", helper.make_tensor("t", TensorProto.UINT64, [2], [1, 2]).SerializeToString()
    for path in sorted((data_dir / "node").glob("*/test_data_set_0/input_0.pb"))[:200]:
        if path.stat().st_size <= SMALL_MODEL_BYTES:
            yield path.parent.parent.name, path.read_bytes()


def idx(dims, payload):
    return struct.pack(">BBBB", 0, 0, 8, len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + payload


def idx_seeds():
    rng = random.Random(0)
    for count, rows, cols in ((2, 3, 3), (1, 28, 28), (0, 2, 2), (3, 1, 1)):
        images = idx((count, rows, cols), bytes(rng.randrange(256) for _ in range(count * rows * cols)))
        labels = idx((count,), bytes(rng.randrange(10) for _ in range(count)))
        for gz in (False, True):
            first = gzip.compress(images, mtime=0) if gz else images
            second = gzip.compress(labels, mtime=0) if gz else labels
            yield f"n{count}_{rows}x{cols}{'_gz' if gz else ''}", struct.pack(">H", len(first)) + first + second


def checkpoint_seeds():
    """Checkpoints for the fuzz target's classifier: W [4,3], B [3], Adam (two slots)."""
    arrays = {"scaler.scale": np.array([32768.0], np.float32),
              "scaler.counters": np.array([0, 1, 3, 0, 0], np.int64),
              "optimizer.step": np.array([3], np.int64),
              "data.position": np.array([0, 0, 3, 3], np.int64)}
    for name, shape in (("W", (4, 3)), ("B", (3,))):
        arrays["weight/" + name] = np.full(shape, 0.5, np.float32)
        arrays["slot0/" + name] = np.zeros(shape, np.float32)
        arrays["slot1/" + name] = np.ones(shape, np.float32)
    for compressed in (False, True):
        buffer = io.BytesIO()
        (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
        yield "adam_compressed" if compressed else "adam", buffer.getvalue()


def run_seeds():
    rng = random.Random(0)
    for i in range(16):
        yield f"recipe{i}", bytes(rng.randrange(256) for _ in range(16 + 16 * i))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--backend-data", type=pathlib.Path, required=True)
    parser.add_argument("--models", type=pathlib.Path, required=True)
    parser.add_argument("--max-per-target", type=int, default=0)
    args = parser.parse_args()

    def models():
        yield from bundled_models(args.models)
        yield from backend_models(args.backend_data)

    targets = {
        "model_load": lambda: (*external_data_models(), *models()),
        "graph_view": models,
        "convert": models,
        "run": run_seeds,
        "npy": npy_seeds,
        "npz": npz_seeds,
        "tensor_proto": lambda: tensor_proto_seeds(args.backend_data),
        "idx": idx_seeds,
        "checkpoint": checkpoint_seeds,
    }
    for target, seeds in targets.items():
        folder = args.out / target
        folder.mkdir(parents=True, exist_ok=True)
        written = 0
        for name, data in seeds():
            if args.max_per_target and written >= args.max_per_target:
                break
            (folder / name).write_bytes(data)
            written += 1
        print(f"{target}: {written} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
