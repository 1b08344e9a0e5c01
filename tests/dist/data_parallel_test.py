"""`mpirun -np 2 onnx-amp train` against one process, through the CLI.

1. Same weights. The guide's MLP (U = 64) trains K = 3 SGD steps on a 64-sample set, as one
   rank with --batch-size 64 and as two ranks with --batch-size 32 (so every step of both
   runs sums the gradient over the same 64 samples), under float32, mixed_float16 and
   mixed_bfloat16. Each step of the 2-rank run must agree with one 1-rank step from the same
   weights within the bound derived in `step_bound` (float32 summation order, plus one
   low-precision rounding flip per rounding point of the mixed graphs, plus the rounding of
   the update); after all K steps the two runs must agree within those bounds carried
   through the later steps. A step on another batch must break the step bound, so it is not
   vacuous.
2. An inf planted in one sample: whichever rank's shard holds it, every rank skips that step
   and halves the same loss scale (rank 0's metrics show the skips and the scales of the
   1-rank run; the run's closing replica check passes only if both ranks hold the same
   weights and scale).
3. A rank killed with SIGKILL mid-run: mpirun ends within a bounded wait, non-zero, the
   survivor says it was stopped by the launcher, the last checkpoint loads, and a resume
   with the same number of ranks finishes; a resume with another number fails, naming it.
4. A rank stopped with SIGSTOP (alive but silent): the other rank's watchdog ends the job
   after --dist-timeout with an error naming the all-reduce.
5. A resumed 2-rank run ends bit-identical to an uninterrupted one; `mpirun -np 1` ends
   bit-identical to a plain run; ranks given different flags refuse to start.
6. Buckets all-reduced while the backward pass runs (the default) and after it
   (--no-dist-overlap) give the same weights bit for bit, with one and with two micro-batches
   per step.
7. `--device cuda` under mpirun where no GPU is usable: every rank's error names the reason
   and the job ends within a bounded wait (where a GPU is visible, nccl_train_test.py runs
   the GPU checks instead).

    data_parallel_test.py --cli BUILD/bin/onnx-amp --models models --work DIR"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np

MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"]
# CI runs as root; Open MPI refuses root without both variables.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
for launcher_variable in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"):
    ENV.pop(launcher_variable, None)
LAYERS = ("dense1", "dense2", "dense3")
U32 = 2.0 ** -24
UNIT_ROUNDOFF = {"float32": 0.0, "mixed_float16": 2.0 ** -11, "mixed_bfloat16": 2.0 ** -8}
LR = 1e-4
STEPS = 3
SAMPLES = 64

failures = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        failures.append(message)


class Cli:
    def __init__(self, cli, model, work):
        self.cli, self.model, self.work = cli, model, work

    def train(self, data, *flags):
        return [self.cli, "train", self.model, "--data", data, "--threads", "1", *flags]

    def run(self, ranks, data, *flags, timeout=120):
        command = self.train(data, *flags)
        if ranks:
            command = MPIRUN + ["-np", str(ranks)] + command
        return subprocess.run(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)


def weights(checkpoint):
    with np.load(checkpoint) as arrays:
        return {name[len("weight/"):]: arrays[name].astype(np.float64) for name in arrays.files
                if name.startswith("weight/")}


def metrics(path):
    import json
    with open(path) as lines:
        return [json.loads(line) for line in lines if '"step"' in line]


# ---- 1. the reduction-order bound --------------------------------------------------------

def forward_backward(w, x, labels):
    """Float64 gradient of the mean cross-entropy, and its absolute-value twin: every sum
    and product of the forward and backward pass taken over |terms| (no ReLU mask; |p - y|
    bounded by p + y), which bounds what any summation order or rounding can move."""
    n = x.shape[0]
    onehot = np.eye(10)[labels]
    acts, abs_acts, pre = [x], [np.abs(x)], []
    for i, layer in enumerate(LAYERS):
        kernel, bias = w[layer + ".kernel"], w[layer + ".bias"]
        z = acts[-1] @ kernel + bias
        abs_z = abs_acts[-1] @ np.abs(kernel) + np.abs(bias)
        pre.append(z)
        acts.append(np.maximum(z, 0) if i < 2 else z)
        abs_acts.append(abs_z)
    logits = acts[-1]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    delta, abs_delta = (p - onehot) / n, (p + onehot) / n
    grad, abs_grad = {}, {}
    for i in reversed(range(3)):
        layer = LAYERS[i]
        grad[layer + ".kernel"] = acts[i].T @ delta
        grad[layer + ".bias"] = delta.sum(0)
        abs_grad[layer + ".kernel"] = abs_acts[i].T @ abs_delta
        abs_grad[layer + ".bias"] = abs_delta.sum(0)
        if i > 0:
            kernel = w[layer + ".kernel"]
            delta = (delta @ kernel.T) * (pre[i - 1] > 0)
            abs_delta = abs_delta @ np.abs(kernel).T
    return grad, abs_grad


def hessian_norm(w, x, labels, iterations=20):
    """Largest |eigenvalue| of the loss Hessian at w (power iteration on central
    differences of the float64 gradient)."""
    rng = np.random.default_rng(0)
    v = {k: rng.standard_normal(a.shape) for k, a in w.items()}
    norm = 0.0
    for _ in range(iterations):
        length = np.sqrt(sum((a * a).sum() for a in v.values()))
        v = {k: a / length for k, a in v.items()}
        h = 1e-5
        plus, _ = forward_backward({k: w[k] + h * v[k] for k in w}, x, labels)
        minus, _ = forward_backward({k: w[k] - h * v[k] for k in w}, x, labels)
        v = {k: (plus[k] - minus[k]) / (2 * h) for k in w}
        norm = np.sqrt(sum((a * a).sum() for a in v.values()))
    return norm


def step_bound(w, x, labels, policy):
    """Per-element bound on |w'_2ranks - w'_1rank| after one SGD step from the same w.

    Each run computes every gradient element as a sum over the same per-sample terms, only
    in another order (the batch is split 32 + 32 and the halves added across ranks; the
    kernels may also block the GEMM reductions differently for 32 and 64 rows). The longest
    chain of float32 operations behind one element has D operations (the forward reductions
    784 + 64 + 64 with their biases, the softmax, the backward reductions 10 + 64 + 64, the
    64-sample batch sum, the scale and the rank sum), so each run is within gamma_D * A of
    the exact gradient, gamma_D = D u / (1 - D u), u = 2^-24, A the absolute-value gradient
    (forward_backward). A mixed graph rounds to float16 / bfloat16 at c = 12 points along
    that chain (casts of x and the three kernels, three GEMM outputs forward, the loss
    gradient, two activation gradients and the weight gradient); a different float32 input
    to a rounding can flip it by one unit roundoff u_low: c * u_low * A in all. Two runs:
    lr * 2 (gamma_D + c u_low) A. The update w - lr g is rounded to float32 once per run
    (u |w'| each) and lr * g once (u lr A each)."""
    depth = (784 + 1) + (64 + 1) + (64 + 1) + 14 + 10 + 64 + 64 + 64 + 3
    gamma = depth * U32 / (1 - depth * U32)
    rounding = 12 * UNIT_ROUNDOFF[policy]
    grad, abs_grad = forward_backward(w, x, labels)
    bound = {}
    for k in w:
        updated = np.abs(w[k] - LR * grad[k])
        bound[k] = LR * 2 * (gamma + rounding) * abs_grad[k] + 2 * U32 * (updated + LR * abs_grad[k])
    return bound


def worst_ratio(a, b, bound):
    return max(float(np.max(np.abs(a[k] - b[k]) / bound[k])) for k in bound)


def as_single_rank(checkpoint, folder):
    """The checkpoint rewritten as if one rank had written it, in `folder`."""
    os.makedirs(folder, exist_ok=True)
    with np.load(checkpoint) as arrays:
        kept = {name: arrays[name] for name in arrays.files if name != "data.ranks"}
    with open(os.path.join(folder, "checkpoint.npz"), "wb") as out:
        np.savez(out, **kept)


def same_weights(cli, work, model_weights):
    """For each of the K steps: from the 2-rank run's weights after step k - 1, one step on
    1 rank x 64 and on 2 ranks x 32 agree within step_bound (no earlier difference carries
    into the bound, so it stays tight); after all K steps the two runs' weights agree within
    the sum of the per-step bounds, each step's difference carried by the Hessian at most
    (1 + lr L) per later step (the bound's only estimate: L by power iteration, doubled)."""
    rng = np.random.default_rng(11)
    x = rng.random((SAMPLES, 784), dtype=np.float32)
    labels = rng.integers(0, 10, SAMPLES)
    x64 = x.astype(np.float64)
    data = os.path.join(work, "same.npz")
    np.savez(data, x=x, y=labels)
    common = ["--optimizer", "sgd", "--lr", str(LR), "--seed", "3"]
    lipschitz = 2 * hessian_norm(model_weights, x64, labels)
    for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
        flags = common + ["--policy", policy]
        previous, ratios, total = model_weights, [], {k: 0.0 for k in model_weights}
        for step in range(1, STEPS + 1):
            two = os.path.join(work, f"same-{policy}-2-{step}")
            done = cli.run(2, data, *flags, "--batch-size", "32", "--max-steps", str(step), "--checkpoint-dir", two)
            check(done.returncode == 0, f"{policy}: 2 ranks trained {step} step(s)\n{done.stdout[-2000:]}")
            if done.returncode != 0:
                return
            one = os.path.join(work, f"same-{policy}-1-{step}")
            if step > 1:
                as_single_rank(os.path.join(work, f"same-{policy}-2-{step - 1}", "checkpoint.npz"), one)
            cli.run(0, data, *flags, "--batch-size", str(SAMPLES), "--max-steps", str(step), "--checkpoint-dir", one,
                    "--resume")
            bound = step_bound(previous, x64, labels, policy)
            reached = weights(os.path.join(two, "checkpoint.npz"))
            ratios.append(worst_ratio(reached, weights(os.path.join(one, "checkpoint.npz")), bound))
            total = {k: total[k] * (1 + LR * lipschitz) + bound[k] for k in total}
            previous = reached
            if policy == "float32" and step == 1:
                # The same bound must catch a step that saw another batch (half of it).
                control = os.path.join(work, "same-control")
                cli.run(0, data, *flags, "--batch-size", "32", "--max-steps", "1", "--checkpoint-dir", control)
                ratio = worst_ratio(weights(os.path.join(control, "checkpoint.npz")), reached, bound)
                check(ratio > 10.0, f"the step bound tells a step on half the batch apart (ratio {ratio:.3g})")
        print(f"      {policy}: max |w2 - w1| / bound per step = {', '.join(f'{r:.3g}' for r in ratios)}")
        check(max(ratios) <= 1.0,
              f"{policy}: each of {STEPS} steps on 2 ranks x 32 equals 1 rank x 64 within the bound")
        whole = os.path.join(work, f"same-{policy}-whole")
        cli.run(0, data, *flags, "--batch-size", str(SAMPLES), "--max-steps", str(STEPS), "--checkpoint-dir", whole)
        final = worst_ratio(previous, weights(os.path.join(whole, "checkpoint.npz")), total)
        print(f"      {policy}: after {STEPS} steps max |w2 - w1| / bound = {final:.3g} "
              f"(Hessian bound {lipschitz:.3g})")
        check(final <= 1.0, f"{policy}: after {STEPS} steps 2 ranks x 32 hold the weights of 1 rank x 64")


# ---- 2. an inf in one rank's shard ------------------------------------------------------

def planted_inf(cli, work):
    rng = np.random.default_rng(5)
    x = rng.random((128, 784), dtype=np.float32)
    x[77, 100] = np.inf
    data = os.path.join(work, "inf.npz")
    np.savez(data, x=x, y=rng.integers(0, 10, 128))
    # 128 samples, 64 per step: the poisoned sample lands in one rank's half of one step per epoch.
    runs = {}
    for ranks, batch in ((0, 64), (2, 32)):
        path = os.path.join(work, f"inf-{ranks}.jsonl")
        done = cli.run(ranks, data, "--policy", "mixed_float16", "--batch-size", str(batch), "--epochs", "3",
                       "--optimizer", "adam", "--metrics", path, "--seed", "9")
        check(done.returncode == 0, f"{ranks or 1} rank(s) trained through the inf\n{done.stdout[-2000:]}")
        runs[ranks] = metrics(path)
    one, two = runs[0], runs[2]
    skipped = [m["step"] for m in two if m["skipped"]]
    check(len(skipped) == 3, f"2 ranks: one skipped step per epoch, {skipped}")
    check(skipped == [m["step"] for m in one if m["skipped"]], "2 ranks skip the steps 1 rank skips")
    check([m["scale"] for m in two] == [m["scale"] for m in one], "the same loss scale at every step as 1 rank")
    halved = all(two[s]["scale"] == two[s - 1]["scale"] / 2 for s in skipped if s < len(two))
    check(halved, "each skip halves the scale for the next step")


# ---- 3, 4. a killed and a stopped rank ----------------------------------------------------

def rank_pids(launcher_pid):
    """Rank -> pid of the processes mpirun started, from their environment."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        rank = environ.get(b"OMPI_COMM_WORLD_RANK")
        if rank is not None and parent == launcher_pid:
            found[int(rank)] = int(entry)
    return found


def start_long_run(cli, data, folder, *flags):
    log = open(os.path.join(folder + ".log"), "w")
    command = MPIRUN + ["-np", "2"] + cli.train(data, "--batch-size", "32", "--max-steps", "10000000",
                                                 "--checkpoint-dir", folder, "--checkpoint-every", "10", *flags)
    process = subprocess.Popen(command, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    checkpoint = os.path.join(folder, "checkpoint.npz")
    pids = {}
    while time.time() < deadline and (len(pids) < 2 or not os.path.exists(checkpoint)):
        time.sleep(0.2)
        pids = rank_pids(process.pid)
    time.sleep(0.5)  # a few more checkpoints
    return process, pids, log.name


def wait_bounded(process, seconds):
    started = time.time()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None
    return time.time() - started


def checkpoint_loads(path):
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.testzip() is not None:
                return False
        with np.load(path) as arrays:
            return all(np.all(np.isfinite(arrays[n])) for n in arrays.files if n.startswith("weight/"))
    except Exception:  # any parse failure is the finding
        return False


def killed_rank(cli, work, data):
    folder = os.path.join(work, "killed")
    process, pids, log = start_long_run(cli, data, folder, "--metrics", os.path.join(work, "killed.jsonl"))
    check(len(pids) == 2, f"found both ranks of the running job {pids}")
    if len(pids) < 2:
        process.kill()
        return
    os.kill(pids[1], signal.SIGKILL)
    waited = wait_bounded(process, 30)
    output = open(log).read()
    check(waited is not None, f"the job ended within 30 s of the kill (took {waited and round(waited, 1)} s)")
    check(process.returncode != 0, "mpirun exits non-zero")
    check("rank 0 of 2 was stopped by the launcher" in output, f"the survivor says why it stops\n{output[-1500:]}")
    checkpoint = os.path.join(folder, "checkpoint.npz")
    check(checkpoint_loads(checkpoint), "the last checkpoint loads, every CRC intact, weights finite")
    with np.load(checkpoint) as arrays:
        step = int(arrays["data.position"][3])
        check(int(arrays["data.ranks"][0]) == 2, "the checkpoint records 2 ranks")
    resumed = cli.run(2, data, "--batch-size", "32", "--max-steps", str(step + 5), "--checkpoint-dir", folder,
                      "--resume")
    check(resumed.returncode == 0 and f"resumed from {checkpoint} at step {step}" in resumed.stdout,
          f"resume with 2 ranks continues from step {step}\n{resumed.stdout[-1500:]}")
    other = cli.run(0, data, "--batch-size", "32", "--max-steps", str(step + 10), "--checkpoint-dir", folder,
                    "--resume")
    check(other.returncode != 0 and "written by a run over 2 rank(s)" in other.stdout,
          f"resume with 1 rank is refused, naming the rank count\n{other.stdout[-800:]}")


def stopped_rank(cli, work, data):
    folder = os.path.join(work, "stopped")
    process, pids, log = start_long_run(cli, data, folder, "--dist-timeout", "2")
    check(len(pids) == 2, f"found both ranks of the running job {pids}")
    if len(pids) < 2:
        process.kill()
        return
    os.kill(pids[1], signal.SIGSTOP)
    waited = wait_bounded(process, 40)
    for pid in pids.values():  # never leave a stopped process behind
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    output = open(log).read()
    check(waited is not None, f"the job ended within 40 s of the stop (took {waited and round(waited, 1)} s)")
    check(process.returncode != 0, "mpirun exits non-zero")
    # Rank 1 may stop before any of a step's collectives: whichever rank 0 waits in is named.
    collective = r"(gradient all-reduce of step|skip agreement of step|replica check of the training state at step)"
    named = re.search(r"rank 0 of 2: the " + collective + r" \d+.* did not complete within 2\.0 s", output)
    check(named is not None, f"the waiting rank names the collective and step it gave up on\n{output[-1500:]}")


# ---- 5. resume, one rank, mismatched flags -------------------------------------------------

def resume_and_single_rank(cli, work, data):
    common = ["--batch-size", "32", "--policy", "mixed_float16", "--optimizer", "adam"]
    whole, parts = os.path.join(work, "whole"), os.path.join(work, "parts")
    cli.run(2, data, *common, "--max-steps", "12", "--checkpoint-dir", whole)
    # The resumed run also sums in 50 KiB buckets (several all-reduces a step instead of one):
    # with two ranks each element is one addition whatever the bucket, so the bits must not change.
    tiny = ["--dist-bucket-mib", "0.05"]
    cli.run(2, data, *common, *tiny, "--max-steps", "5", "--checkpoint-dir", parts)
    done = cli.run(2, data, *common, *tiny, "--max-steps", "12", "--checkpoint-dir", parts, "--resume")
    buckets = re.search(r"in (\d+) bucket\(s\)", done.stdout)
    check(buckets is not None and int(buckets.group(1)) > 1,
          f"--dist-bucket-mib 0.05 splits the 215 KiB of gradients into buckets\n{done.stdout[-800:]}")
    a, b = weights(os.path.join(whole, "checkpoint.npz")), weights(os.path.join(parts, "checkpoint.npz"))
    check(all(a[k].tobytes() == b[k].tobytes() for k in a),
          "2 ranks: 5 steps + resume to 12 in small buckets == 12 steps, bit for bit")

    plain, single = os.path.join(work, "plain"), os.path.join(work, "single")
    out = cli.run(0, data, *common, "--max-steps", "6", "--checkpoint-dir", plain)
    check("data parallel" not in out.stdout, "a plain run says nothing about data parallelism")
    cli.run(1, data, *common, "--max-steps", "6", "--checkpoint-dir", single)
    a, b = weights(os.path.join(plain, "checkpoint.npz")), weights(os.path.join(single, "checkpoint.npz"))
    check(all(a[k].tobytes() == b[k].tobytes() for k in a), "mpirun -np 1 == a plain run, bit for bit")

    command = (MPIRUN + ["-np", "1"] + cli.train(data, *common, "--max-steps", "3") + [":", "-np", "1"] +
               cli.train(data, *common, "--max-steps", "3", "--lr", "0.5"))
    mixed = subprocess.run(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    check(mixed.returncode != 0 and "the ranks do not hold the same training state at step 0" in mixed.stdout,
          f"ranks with different flags refuse to start\n{mixed.stdout[-800:]}")


def overlap_changes_no_bit(cli, work, data):
    # Buckets started while the backward pass runs (the default) and summed after it
    # (--no-dist-overlap) add the same two numbers per element: the weights must be the same bits,
    # with one micro-batch per step and with two accumulated.
    common = ["--batch-size", "32", "--policy", "mixed_float16", "--optimizer", "adam", "--max-steps", "8",
              "--dist-bucket-mib", "0.05"]
    for accumulation in ("1", "2"):
        folders = {}
        for mode, flags in (("beside", []), ("after", ["--no-dist-overlap"])):
            folders[mode] = os.path.join(work, f"overlap-{mode}-{accumulation}")
            done = cli.run(2, data, *common, "--accumulation-steps", accumulation, *flags,
                           "--checkpoint-dir", folders[mode])
            check(done.returncode == 0 and f"gradients summed in float32 {mode} the backward pass" in done.stdout,
                  f"2 ranks, {mode} the backward pass, {accumulation} micro-batch(es) per step\n{done.stdout[-800:]}")
        a = weights(os.path.join(folders["beside"], "checkpoint.npz"))
        b = weights(os.path.join(folders["after"], "checkpoint.npz"))
        check(a.keys() == b.keys() and all(a[k].tobytes() == b[k].tobytes() for k in a),
              f"2 ranks, {accumulation} micro-batch(es): all-reduce beside the backward pass == after it, bit for bit")


# ---- 7. --device cuda without a GPU -------------------------------------------------------

def cuda_without_gpu(cli, work, data):
    probe = cli.run(0, data, "--device", "cuda", "--max-steps", "1", "--eval-limit", "1")
    if probe.returncode == 0:
        print("skip  --device cuda without a GPU: a GPU is visible here (nccl_train_test.py covers it)")
        return
    start = time.monotonic()
    done = cli.run(2, data, "--device", "cuda", "--batch-size", "32", "--max-steps", "2", timeout=60)
    seconds = time.monotonic() - start
    reasons = ("no CUDA device is visible to rank", "built without CUDA support", "--device cuda")
    check(done.returncode != 0 and any(reason in done.stdout for reason in reasons) and "rank " in done.stdout,
          f"mpirun -np 2 --device cuda without a GPU: exit {done.returncode} after {seconds:.1f} s, "
          f"the rank's error names the reason\n{done.stdout[-800:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    if shutil.which("mpirun") is None:
        print("mpirun not found: tools/install-deps installs Open MPI", file=sys.stderr)
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model = os.path.join(args.models, "mlp_u64.onnx")
    cli = Cli(args.cli, model, args.work)
    import onnx
    from onnx import numpy_helper
    model_weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(model).graph.initializer}

    rng = np.random.default_rng(2)
    data = os.path.join(args.work, "long.npz")
    np.savez(data, x=rng.random((512, 784), dtype=np.float32), y=rng.integers(0, 10, 512))

    same_weights(cli, args.work, model_weights)
    planted_inf(cli, args.work)
    killed_rank(cli, args.work, data)
    stopped_rank(cli, args.work, data)
    resume_and_single_rank(cli, args.work, data)
    overlap_changes_no_bit(cli, args.work, data)
    cuda_without_gpu(cli, args.work, data)
    print(f"{len(failures)} failed" if failures else "all data-parallel checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
