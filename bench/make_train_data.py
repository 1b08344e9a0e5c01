"""Writes the benchmarks' training data: 8192 random samples of 784 features and 10
classes (one batch of the largest case), deterministic."""
import sys

import numpy as np

rng = np.random.default_rng(784)
np.savez(sys.argv[1], x=rng.random((8192, 784), dtype=np.float32), y=rng.integers(0, 10, 8192).astype(np.int64))
