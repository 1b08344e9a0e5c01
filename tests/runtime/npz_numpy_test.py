"""Cross-checks the runtime's .npy/.npz/.pb readers and writers against NumPy and ONNX.

Usage: npz_numpy_test.py NPZ_COPY_TOOL
NumPy writes files (np.save with format versions 1 and 2, np.savez, np.savez_compressed,
onnx.numpy_helper for .pb); the tool reads each and writes it back; NumPy reads the copy
and compares dtype, shape and every byte.
"""
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

TOOL = sys.argv[1]
rng = np.random.default_rng(7)


def arrays():
    out = {}
    for code in ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]:
        dtype = np.dtype("<" + code)
        if dtype.kind == "f":
            values = rng.standard_normal((2, 3, 4)).astype(dtype)
            values.flat[0] = np.inf
            values.flat[1] = np.nan
            values.flat[2] = -0.0
        else:
            info = np.iinfo(dtype)
            values = rng.integers(info.min, info.max, size=(2, 3, 4), dtype=dtype, endpoint=True)
        out["a_" + code] = values
    out["flags"] = rng.integers(0, 2, size=(5,)).astype(np.bool_)
    out["scalar"] = np.array(3.5, dtype=np.float32)
    out["empty"] = np.zeros((0, 3), dtype=np.int64)
    return out


def copy(src, dst, expect_ok=True):
    result = subprocess.run([TOOL, src, dst], capture_output=True, text=True)
    if expect_ok and result.returncode != 0:
        raise AssertionError(f"tool failed on {src}: {result.stderr}")
    return result


def same(a, b, what):
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert a.tobytes() == b.tobytes(), f"{what}: bytes differ"


def main():
    checks = 0
    data = arrays()
    with tempfile.TemporaryDirectory() as tmp:
        for writer in (np.savez, np.savez_compressed):
            src = os.path.join(tmp, writer.__name__ + ".npz")
            writer(src, **data)
            dst = os.path.join(tmp, writer.__name__ + "_copy.npz")
            copy(src, dst)
            with np.load(dst) as loaded:
                assert list(loaded.keys()) == list(data.keys()), (list(loaded.keys()), list(data.keys()))
                for name, values in data.items():
                    same(loaded[name], values, f"{writer.__name__}:{name}")
                    checks += 1

        for version in [(1, 0), (2, 0), (3, 0)]:
            for name, values in data.items():
                src = os.path.join(tmp, f"{name}_v{version[0]}.npy")
                with open(src, "wb") as f:
                    np.lib.format.write_array(f, values, version=version)
                dst = os.path.join(tmp, f"{name}_v{version[0]}_copy.npy")
                copy(src, dst)
                same(np.load(dst), values, f"npy v{version}:{name}")
                checks += 1

        for name, values in data.items():
            src = os.path.join(tmp, name + ".pb")
            with open(src, "wb") as f:
                f.write(numpy_helper.from_array(values, name).SerializeToString())
            dst = os.path.join(tmp, name + "_pb.npz")
            copy(src, dst)
            with np.load(dst) as loaded:
                same(loaded[name], values, f"pb:{name}")
                checks += 1

        # bfloat16 saved by ml_dtypes is the opaque '<V2': refused, with the file named.
        src = os.path.join(tmp, "bf16.npy")
        np.save(src, np.ones((2,), dtype=ml_dtypes.bfloat16))
        result = copy(src, os.path.join(tmp, "bf16_copy.npy"), expect_ok=False)
        assert result.returncode == 1, result
        assert "bf16.npy: dtype '<V2'" in result.stderr, result.stderr
        checks += 1

        # Big-endian arrays are refused rather than misread.
        src = os.path.join(tmp, "big.npy")
        np.save(src, np.arange(3, dtype=">f4"))
        result = copy(src, os.path.join(tmp, "big_copy.npy"), expect_ok=False)
        assert result.returncode == 1 and "'>f4'" in result.stderr, result.stderr
        checks += 1
    print(f"npz_numpy_test: {checks} checks passed")


if __name__ == "__main__":
    main()
