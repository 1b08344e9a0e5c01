"""Checks every metric of CompareTensors (runtime/validate/tensor_metrics.h) against
NumPy on fixed arrays: writes them to an .npz, runs metrics_probe on it and recomputes
each metric from its documented definition."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

PROBE = None


def numpy_metrics(r, c, rtol, atol, classes):
    r = r.astype(np.float64).ravel()
    c = c.astype(np.float64).ravel()
    rf, cf = np.isfinite(r), np.isfinite(c)
    both = rf & cf
    ref_max = np.abs(r[rf]).max() if rf.any() else 0.0
    cand_max = np.abs(c[cf]).max() if cf.any() else 0.0
    floor = max(1e-6 * ref_max, sys.float_info.min)
    rb, cb = r[both], c[both]
    abs_err = np.abs(cb - rb)
    rel_err = abs_err / np.maximum(np.abs(rb), floor)
    same_non_finite = (~rf & ~cf) & ((np.isnan(r) & np.isnan(c)) | (r == c))
    mismatched = (~both) & ~same_non_finite
    violations = int(mismatched.sum() + (abs_err > atol + rtol * np.abs(rb)).sum())
    ref_sq, cand_sq = float(np.sum(rb * rb)), float(np.sum(cb * cb))
    diff_sq = float(np.sum(abs_err * abs_err))
    if ref_sq > 0:
        rel_l2 = math.sqrt(diff_sq / ref_sq)
    else:
        rel_l2 = math.inf if diff_sq > 0 else 0.0
    if ref_sq > 0 and cand_sq > 0:
        cosine = float(np.dot(rb, cb)) / (math.sqrt(ref_sq) * math.sqrt(cand_sq))
    else:
        cosine = 1.0 if ref_sq == 0 and cand_sq == 0 else 0.0
    # worst element: any non-finite mismatch first, else the largest abs / allowed
    if mismatched.any():
        worst = int(np.argmax(mismatched))
    else:
        with np.errstate(invalid="ignore"):
            err = np.where(both, np.abs(c - r), 0.0)
        allowed = atol + rtol * np.abs(np.where(both, r, 0.0))
        ratio = np.where(allowed > 0, err / np.where(allowed > 0, allowed, 1.0),
                         np.where(err > 0, sys.float_info.max, 0.0))
        ratio = np.where(both, ratio, -1.0)
        worst = int(np.argmax(ratio)) if both.any() else -1
    m = {
        "count": len(r), "reference_non_finite": int((~rf).sum()), "candidate_non_finite": int((~cf).sum()),
        "violations": violations, "worst_index": worst,
        "max_abs_error": float(abs_err.max()) if len(abs_err) else 0.0,
        "max_rel_error": float(rel_err.max()) if len(rel_err) else 0.0,
        "mean_rel_error": float(rel_err.mean()) if len(rel_err) else 0.0,
        "rel_l2_error": rel_l2, "cosine_similarity": cosine,
        "reference_max_abs": float(ref_max), "candidate_max_abs": float(cand_max),
        "float16_headroom": 65504.0 / ref_max if ref_max > 0 else math.inf,
        "top1_agreement": None, "top5_agreement": None,
    }
    if classes > 1 and len(r) % classes == 0:
        rr, cc = r.reshape(-1, classes), c.reshape(-1, classes)
        target = rr.argmax(axis=1)
        rank = np.array([int((row > row[t]).sum()) for row, t in zip(cc, target)])
        m["top1_agreement"] = float((rank < 1).mean())
        if classes >= 5:
            m["top5_agreement"] = float((rank < 5).mean())
    return m


def probe(r, c, rtol, atol, classes):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "arrays.npz")
        np.savez(path, reference=r, candidate=c)
        out = subprocess.run([PROBE, path, repr(rtol), repr(atol), str(classes)], capture_output=True, text=True)
        if out.returncode != 0:
            raise AssertionError("metrics_probe failed: " + out.stderr)
        values = json.loads(out.stdout)
    return {k: (float(v) if v in ("inf", "-inf", "nan") else v) for k, v in values.items()}


class MetricsAgainstNumpy(unittest.TestCase):
    def check(self, r, c, rtol, atol, classes=0):
        got = probe(r, c, rtol, atol, classes)
        want = numpy_metrics(r, c, rtol, atol, classes)
        self.assertEqual(set(got), set(want))
        for key, value in want.items():
            with self.subTest(metric=key):
                if value is None or isinstance(value, int):
                    self.assertEqual(got[key], value)
                elif math.isinf(value):
                    self.assertEqual(got[key], value)
                else:
                    self.assertTrue(math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-300),
                                    f"{key}: {got[key]} vs NumPy {value}")

    def test_float16_rounding_of_random_values(self):
        rng = np.random.default_rng(1)
        r = rng.normal(0, 3, (64, 10))
        c = r.astype(np.float16).astype(np.float64)  # the rounding a float16 store makes
        self.check(r, c, 2 ** -11, 0.0, classes=10)
        self.check(r, c, 2 ** -12, 0.0, classes=10)  # half the unit roundoff: some elements off

    def test_zeros_non_finite_and_float32(self):
        rng = np.random.default_rng(2)
        r = rng.uniform(-100, 100, 500).astype(np.float32)
        r[::7] = 0.0
        c = (r * (1 + rng.normal(0, 1e-3, 500))).astype(np.float32)
        c[3], c[10] = np.inf, np.nan
        r[20], c[20] = np.nan, np.nan
        r[30], c[30] = -np.inf, -np.inf
        self.check(r, c, 1e-3, 1e-2)

    def test_classifier_with_disagreements(self):
        rng = np.random.default_rng(3)
        r = rng.normal(0, 1, (40, 8))
        c = r + rng.normal(0, 0.5, (40, 8))
        self.check(r, c, 1e-2, 1e-3, classes=8)

    def test_all_zero_reference(self):
        self.check(np.zeros(6), np.array([0, 0, 1e-3, 0, 0, 0.0]), 0.1, 0.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    args, rest = parser.parse_known_args()
    PROBE = args.probe
    unittest.main(argv=[sys.argv[0]] + rest)
