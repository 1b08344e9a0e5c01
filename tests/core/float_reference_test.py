"""Compares our float32 <-> float16 / bfloat16 conversions bit for bit with NumPy's
float16 and ml_dtypes' bfloat16, for every conversion path the CPU supports and for
the library's own dispatch.

Inputs: special values, every float16 and bfloat16 tie (and its neighbours), random
float32 bit patterns over the whole range and random ones in the float16 range.

NaN results: the references keep NaN and sign but differ from IEEE/x86 in the payload
(NumPy does not quiet signalling NaNs, ml_dtypes canonicalises bfloat16 NaNs), so for
NaNs we check NaN-ness and sign against the reference and the payload against the
x86 rule (quiet bit set, top payload bits kept).

Usage: float_reference_test.py PATH_TO_DTYPE_PROBE
"""

import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

SEED = 20261121
RANDOM_COUNT = 1_000_000


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def is_nan_f32(bits):
    return (bits & 0x7FFFFFFF) > 0x7F800000


def is_nan_16(bits, exponent_mask, mantissa_mask):
    return ((bits & exponent_mask) == exponent_mask) & ((bits & mantissa_mask) != 0)


def special_inputs():
    values = [
        0.0, 1.0, 2.0, 0.5, 65504.0, 65520.0, 65536.0, 65519.99, 65519.996, 65535.0, 1e10, 3.4e38,
        2.0**-14, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 3 * 2.0**-25, 5 * 2.0**-25, 2.0**-14 - 2.0**-25,
        1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8, np.inf,
    ]
    bits = [
        0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F7F7FFF, 0x7F7F8000,  # float extremes
        0x7F800000, 0x7FC00000, 0x7F800001, 0x7FA00000, 0x7F802000, 0x7FFFFFFF,  # inf, NaNs
        0x7F801FFF, 0x7FBFFFFF, 0x7FC00001, 0x7F810000,
    ]
    positive = np.concatenate([f32_bits(values), np.asarray(bits, dtype=np.uint32)])
    return np.concatenate([positive, positive | np.uint32(0x80000000)])


def half_tie_inputs():
    # Midpoint between each finite non-negative float16 and the next one up (65536
    # past 65504), and the float32 neighbours on both sides of it.
    lower = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    upper = np.append(lower[1:], 65536.0)
    midpoints = f32_bits(((lower + upper) / 2).astype(np.float32))
    assert np.all(midpoints.view(np.float32).astype(np.float64) == (lower + upper) / 2), "midpoint not exact"
    around = np.concatenate([midpoints - 1, midpoints, midpoints + 1]).astype(np.uint32)
    return np.concatenate([around, around | np.uint32(0x80000000)])


def bfloat16_tie_inputs():
    # Every bfloat16 pattern, exact, one float32 ulp below the tie, the tie, one above.
    high = np.arange(0, 0x10000, dtype=np.uint32) << np.uint32(16)
    return np.concatenate([high, high | 0x7FFF, high | 0x8000, high | 0x8001]).astype(np.uint32)


def random_inputs(rng):
    whole_range = rng.integers(0, 2**32, size=RANDOM_COUNT, dtype=np.uint64).astype(np.uint32)
    # Exponents 100..145 cover float16 subnormals, normals and overflow.
    exponent = rng.integers(100, 146, size=RANDOM_COUNT, dtype=np.uint64).astype(np.uint32)
    mantissa = rng.integers(0, 2**23, size=RANDOM_COUNT, dtype=np.uint64).astype(np.uint32)
    sign = rng.integers(0, 2, size=RANDOM_COUNT, dtype=np.uint64).astype(np.uint32)
    half_range = (sign << np.uint32(31)) | (exponent << np.uint32(23)) | mantissa
    return np.concatenate([whole_range, half_range])


def run_probe(probe, conversion, path, src, out_dtype, workdir):
    src_file = os.path.join(workdir, "in.bin")
    dst_file = os.path.join(workdir, "out.bin")
    src.tofile(src_file)
    subprocess.run([probe, conversion, path, src_file, dst_file], check=True)
    result = np.fromfile(dst_file, dtype=out_dtype)
    assert result.size == src.size, f"{conversion} {path}: {result.size} results for {src.size} inputs"
    return result


def report(label, src, ours, expected, ok, width):
    bad = np.flatnonzero(~ok)
    print(f"{label}: {src.size} values compared, {bad.size} mismatches")
    for i in bad[:10]:
        print(f"  input 0x{int(src[i]):0{width}x}: ours 0x{int(ours[i]):x}, expected 0x{int(expected[i]):x}")
    return bad.size == 0


def check_narrow(label, src, ours, reference, nan_rule, exponent_mask, mantissa_mask):
    input_nan = is_nan_f32(src)
    sign = ((src >> np.uint32(16)) & np.uint32(0x8000)).astype(np.uint16)
    ok = np.where(input_nan,
                  (ours == nan_rule) & is_nan_16(reference, exponent_mask, mantissa_mask) &
                  ((reference & 0x8000) == sign),
                  ours == reference)
    return report(label, src, ours, np.where(input_nan, nan_rule, reference), ok, 8)


def main():
    probe = sys.argv[1]
    rng = np.random.default_rng(SEED)
    floats = np.concatenate([special_inputs(), half_tie_inputs(), bfloat16_tie_inputs(), random_inputs(rng)])
    halves = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16)

    with np.errstate(all="ignore"):
        ref_half = floats.view(np.float32).astype(np.float16).view(np.uint16)
        ref_bf16 = floats.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
        ref_from_half = halves.view(np.float16).astype(np.float32).view(np.uint32)
        ref_from_bf16 = halves.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    half_nan_rule = (((floats >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7E00) |
                     ((floats >> np.uint32(13)) & np.uint32(0x3FF))).astype(np.uint16)
    bf16_nan_rule = ((floats >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    # NumPy keeps signalling float16 NaNs signalling; the conversion quiets them.
    half_is_nan = is_nan_16(halves, 0x7C00, 0x3FF)
    expected_from_half = np.where(half_is_nan, ref_from_half | np.uint32(0x400000), ref_from_half)

    paths = subprocess.run([probe, "paths"], check=True, capture_output=True, text=True).stdout.split()
    paths.append("dispatch")
    all_ok = True
    compared = 0
    with tempfile.TemporaryDirectory() as workdir:
        for path in paths:
            ours = run_probe(probe, "f32-to-f16", path, floats, np.uint16, workdir)
            all_ok &= check_narrow(f"[{path}] float32->float16 vs numpy", floats, ours, ref_half,
                                   half_nan_rule, 0x7C00, 0x3FF)
            ours = run_probe(probe, "f32-to-bf16", path, floats, np.uint16, workdir)
            all_ok &= check_narrow(f"[{path}] float32->bfloat16 vs ml_dtypes", floats, ours, ref_bf16,
                                   bf16_nan_rule, 0x7F80, 0x7F)
            ours = run_probe(probe, "f16-to-f32", path, halves, np.uint32, workdir)
            all_ok &= report(f"[{path}] float16->float32 vs numpy", halves, ours, expected_from_half,
                             ours == expected_from_half, 4)
            ours = run_probe(probe, "bf16-to-f32", path, halves, np.uint32, workdir)
            all_ok &= report(f"[{path}] bfloat16->float32 vs ml_dtypes", halves, ours, ref_from_bf16,
                             ours == ref_from_bf16, 4)
            compared += 2 * floats.size + 2 * halves.size
    print(f"{compared} conversions compared over {len(paths)} paths ({', '.join(paths)})")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
