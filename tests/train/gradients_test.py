"""First-step gradients of the guide's MLP from `onnx-amp train --save-training-graph`,
run with `onnx-amp run`, against an independent NumPy backward pass: softmax
cross-entropy on the logits (mean over the batch) under each policy, and in float32 the
other two losses on the Softmax output: negative log-likelihood (mean of -probs[label],
as --loss nll computes it on whatever the model outputs) and mean squared error against
one-hot targets."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def loss_and_logits_gradient(logits, labels, loss):
    """The loss and its gradient with respect to the logits, in float64."""
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    prob = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    if loss == "cross_entropy":
        d_logits = prob.copy()
        d_logits[np.arange(n), labels] -= 1
        return -np.log(prob[np.arange(n), labels]).mean(), d_logits / n
    if loss == "nll":
        d_prob = np.zeros_like(prob)
        d_prob[np.arange(n), labels] = -1.0 / n
        value = -prob[np.arange(n), labels].mean()
    else:  # mse against one-hot targets
        target = np.eye(prob.shape[1])[labels]
        d_prob = 2 * (prob - target) / prob.size
        value = ((prob - target) ** 2).mean()
    # Softmax backward: dlogits = p * (dp - sum(dp * p)).
    return value, prob * (d_prob - (d_prob * prob).sum(axis=1, keepdims=True))


def numpy_gradients(weights, x, labels, loss_kind):
    w1, b1, w2, b2, w3, b3 = (weights[k] for k in
                              ("dense1.kernel", "dense1.bias", "dense2.kernel", "dense2.bias", "dense3.kernel", "dense3.bias"))
    x = x.astype(np.float64)
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    loss, d_logits = loss_and_logits_gradient(logits, labels, loss_kind)
    grads = {"dense3.kernel": h2.T @ d_logits, "dense3.bias": d_logits.sum(0)}
    d_h2 = d_logits @ w3.T
    d_z2 = d_h2 * (z2 > 0)
    grads["dense2.kernel"] = h1.T @ d_z2
    grads["dense2.bias"] = d_z2.sum(0)
    d_h1 = d_z2 @ w2.T
    d_z1 = d_h1 * (z1 > 0)
    grads["dense1.kernel"] = x.T @ d_z1
    grads["dense1.bias"] = d_z1.sum(0)
    return loss, grads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    args = parser.parse_args()
    model_path = os.path.join(args.models, "mlp_u64.onnx")
    model = onnx.load(model_path)
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    rng = np.random.default_rng(0)
    n = 32
    x = rng.random((n, 784), dtype=np.float32)
    labels = rng.integers(0, 10, n).astype(np.int64)

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.npz")
        np.savez(data, x=x, y=labels)
        # Relative to each gradient's norm. float16: float16 activations and GEMM inputs
        # (eps 2^-10) through three layers. bfloat16 (eps 2^-7) measured 7% on dense1: a ReLU
        # whose float32 input lies within rounding of 0 flips, and the norm error of dense1's
        # gradient grows with the square root of the flipped fraction.
        runs = (("cross_entropy", "float32", 1e-5), ("cross_entropy", "mixed_float16", 2e-2),
                ("cross_entropy", "mixed_bfloat16", 1e-1), ("nll", "float32", 1e-5), ("mse", "float32", 1e-5))
        for loss_kind, policy, rtol in runs:
            ref_loss, ref = numpy_gradients(weights, x, labels, loss_kind)
            name = f"{loss_kind} {policy}"
            graph = os.path.join(tmp, f"{loss_kind}_{policy}.onnx")
            subprocess.run([args.cli, "train", model_path, "--data", data, "--policy", policy, "--max-steps", "1",
                            "--batch-size", str(n), "--loss", loss_kind, "--save-training-graph", graph,
                            "--threads", "2"], check=True, stdout=subprocess.DEVNULL)
            target = np.eye(10, dtype=np.float32)[labels] if loss_kind == "mse" else labels.reshape(n, 1)
            feeds = {"x": x, "training.target": target, "training.loss_grad": np.array(1.0, dtype=np.float32)}
            feeds.update({k: v.astype(np.float32) for k, v in weights.items()})
            inputs = os.path.join(tmp, "feeds.npz")
            np.savez(inputs, **feeds)
            out = os.path.join(tmp, f"{loss_kind}_{policy}_out.npz")
            subprocess.run([args.cli, "run", graph, "--inputs", inputs, "-o", out, "--threads", "2"], check=True,
                           stdout=subprocess.DEVNULL)
            got = np.load(out)
            loss = float(got["training.loss"])
            if abs(loss - ref_loss) > rtol * abs(ref_loss) + 1e-6:
                print(f"{name}: loss {loss} vs NumPy {ref_loss}")
                failures += 1
            for parameter, expected in ref.items():
                actual = got[parameter + "_grad"]
                if actual.dtype != np.float32:
                    print(f"{name}: {parameter}_grad is {actual.dtype}, expected float32 (master weights)")
                    failures += 1
                # Normwise: a ReLU whose input sits near 0 may flip in low precision, which moves
                # single elements by a whole activation but the tensor's norm only slightly.
                err = np.linalg.norm(actual.astype(np.float64) - expected)
                scale = np.linalg.norm(expected)
                ok = err <= rtol * scale + 1e-7
                print(f"{name}: {parameter}_grad normwise err {err:.3g} (|g| {scale:.3g}) {'ok' if ok else 'FAIL'}")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
