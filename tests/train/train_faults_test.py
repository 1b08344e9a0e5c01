"""Fault tests of `onnx-amp train` through the CLI: what survives when the process dies or
its environment fails.

1. SIGKILL at random points of a run that writes a checkpoint after every step (so some
   kills land inside a checkpoint write): after each kill the last checkpoint.npz (if
   any) must load in NumPy with every CRC intact, and `--resume` must end with weights
   bit-identical to an uninterrupted run's.
2. A full disk (a small tmpfs; skipped, saying so, where mounting is not permitted):
   the checkpoint write that does not fit and an --export that does not fit fail with
   an error naming the file and a non-zero exit; the previous checkpoint still loads
   and resumes bit-identically; no partial export is left.
3. The data file made unreadable mid-run: training keeps going (the data is read whole
   at start), and a --resume with the broken file fails naming it, non-zero.
4. NaN/inf batches: steps that see them are skipped, NaN never reaches the weights,
   and a run where every batch is NaN stops with an error naming the cause.

Prints a table (trials, outcomes, data lost); exits non-zero on any failure.
    train_faults_test.py --cli BUILD/bin/onnx-amp --models models [--trials 50]"""
import argparse
import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np
import onnx
from onnx import numpy_helper

STEPS = 40
COMMON = ["--optimizer", "adam", "--batch-size", "16", "--policy", "mixed_float16", "--threads", "1", "--seed", "5"]


def make_dataset(path, samples=320, nan_rows=(), all_nan=False):
    rng = np.random.default_rng(7)
    x = rng.random((samples, 784), dtype=np.float32)
    y = rng.integers(0, 10, samples).astype(np.int64)
    for row in nan_rows:
        x[row, 3] = np.nan
        x[row, 5] = np.inf
    if all_nan:
        x[:] = np.nan
    np.savez(path, x=x, y=y)


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def same_weights(a, b):
    return a.keys() == b.keys() and all(a[k].tobytes() == b[k].tobytes() for k in a)


def checkpoint_loads(path):
    """NumPy reads every array and zipfile checks every CRC."""
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.testzip() is not None:
                return False
        with np.load(path) as arrays:
            return all(np.all(np.isfinite(arrays[name])) for name in arrays.files if name.startswith("weight/"))
    except Exception:  # any parse failure is the finding
        return False


class Runner:
    def __init__(self, cli, model, data):
        self.cli, self.model, self.data = cli, model, data

    def command(self, *extra, data=None, steps=STEPS):
        return [self.cli, "train", self.model, "--data", data or self.data, "--max-steps", str(steps), *COMMON, *extra]

    def run(self, *extra, data=None, steps=STEPS):
        return subprocess.run(self.command(*extra, data=data, steps=steps), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)


def sigkill_trials(runner, tmp, trials, seed):
    """Returns (rows, failures)."""
    reference = os.path.join(tmp, "reference.onnx")
    start = time.time()
    done = runner.run("--checkpoint-dir", os.path.join(tmp, "ck_ref"), "--checkpoint-every", "1",
                      "--export", reference)
    duration = time.time() - start
    if done.returncode != 0:
        print("reference run failed:", done.stderr)
        return [], 1
    expected = weights(reference)
    rng = random.Random(seed)
    outcomes = {"before the first checkpoint": 0, "between checkpoints": 0, "during a checkpoint write": 0,
                "after the run ended": 0}
    unreadable = resume_failed = differed = leftover = 0
    for trial in range(trials):
        ck = os.path.join(tmp, f"ck{trial}")
        proc = subprocess.Popen(runner.command("--checkpoint-dir", ck, "--checkpoint-every", "1"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, duration * 1.05))
        ended_before_kill = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        checkpoint = os.path.join(ck, "checkpoint.npz")
        temporaries = glob.glob(os.path.join(ck, ".checkpoint.npz.tmp-*"))
        if ended_before_kill:
            outcomes["after the run ended"] += 1
        elif temporaries:
            outcomes["during a checkpoint write"] += 1
        elif os.path.exists(checkpoint):
            outcomes["between checkpoints"] += 1
        else:
            outcomes["before the first checkpoint"] += 1
        if os.path.exists(checkpoint) and not checkpoint_loads(checkpoint):
            unreadable += 1
            print(f"trial {trial}: checkpoint does not load")
            continue
        resumed = os.path.join(ck, "resumed.onnx")
        result = runner.run("--checkpoint-dir", ck, "--checkpoint-every", "1", "--resume", "--export", resumed)
        if result.returncode != 0:
            resume_failed += 1
            print(f"trial {trial}: --resume failed: {result.stderr.strip()}")
        elif not same_weights(weights(resumed), expected):
            differed += 1
            print(f"trial {trial}: resumed weights differ from the uninterrupted run")
        if glob.glob(os.path.join(ck, ".checkpoint.npz.tmp-*")):
            leftover += 1
            print(f"trial {trial}: the killed writer's temporary file survived the resumed run")
        shutil.rmtree(ck)
    rows = [(f"SIGKILL, {name}", count, "0" if count else "-") for name, count in outcomes.items()]
    rows.append(("checkpoint unreadable after a kill", unreadable, ""))
    rows.append(("--resume failed / not bit-identical", f"{resume_failed} / {differed}", ""))
    rows.append(("temporary file left after the resumed run", leftover, ""))
    print(f"SIGKILL: {trials} trials over a {duration:.2f} s run")
    return rows, unreadable + resume_failed + differed + leftover


def mount_tmpfs(folder, size):
    os.makedirs(folder, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", folder], capture_output=True,
                            text=True)
    return result.returncode == 0, result.stderr.strip()


def fill_leaving(folder, free_bytes, name="filler"):
    """Writes a filler file so that about `free_bytes` stay free on the file system."""
    stat = os.statvfs(folder)
    available = stat.f_bavail * stat.f_frsize
    with open(os.path.join(folder, name), "wb") as f:
        f.write(b"\0" * max(0, available - free_bytes))


def full_disk(runner, tmp):
    disk = os.path.join(tmp, "disk")
    mounted, reason = mount_tmpfs(disk, "16m")
    if not mounted:
        print(f"SKIPPED full-disk test: cannot mount a tmpfs ({reason})")
        return [("full disk", "skipped", "-")], 0
    failures = 0
    try:
        reference = os.path.join(tmp, "reference_disk.onnx")
        if runner.run("--checkpoint-dir", os.path.join(tmp, "ck_ref_disk"), "--checkpoint-every", "10",
                      "--export", reference).returncode != 0:
            print("reference run failed")
            return [], 1
        checkpoint_bytes = os.path.getsize(os.path.join(tmp, "ck_ref_disk", "checkpoint.npz"))
        ck = os.path.join(disk, "ck")
        os.makedirs(ck)
        # Room for one checkpoint but not for the temporary file of the second.
        fill_leaving(disk, checkpoint_bytes * 3 // 2)
        result = runner.run("--checkpoint-dir", ck, "--checkpoint-every", "10")
        checkpoint = os.path.join(ck, "checkpoint.npz")
        named = "checkpoint.npz" in result.stderr and "space" in result.stderr.lower()
        if result.returncode == 0 or not named:
            print(f"full disk during a checkpoint: exit {result.returncode}, stderr: {result.stderr.strip()}")
            failures += 1
        previous_loads = os.path.exists(checkpoint) and checkpoint_loads(checkpoint)
        leftovers = glob.glob(os.path.join(ck, ".checkpoint.npz.tmp-*"))
        if not previous_loads or leftovers:
            print(f"after ENOSPC: previous checkpoint loads {previous_loads}, temporary files left {leftovers}")
            failures += 1
        # On a disk with no room left the export fails too, and leaves nothing behind.
        fill_leaving(disk, 0, "filler2")
        export = os.path.join(disk, "exported.onnx")
        exported = runner.run("--export", export, steps=1)
        export_named = exported.returncode != 0 and "exported.onnx" in exported.stderr
        if not export_named or os.path.exists(export) or glob.glob(os.path.join(disk, ".exported.onnx*")):
            print(f"full disk during export: exit {exported.returncode}, stderr: {exported.stderr.strip()}")
            failures += 1
        # With space again, the surviving checkpoint resumes to the uninterrupted result.
        for filler in ("filler", "filler2"):
            os.remove(os.path.join(disk, filler))
        resumed = os.path.join(tmp, "resumed_disk.onnx")
        result = runner.run("--checkpoint-dir", ck, "--checkpoint-every", "10", "--resume", "--export", resumed)
        identical = result.returncode == 0 and same_weights(weights(resumed), weights(reference))
        if not identical:
            print(f"resume after ENOSPC: exit {result.returncode}, identical {identical}: {result.stderr.strip()}")
            failures += 1
        return [("full disk during a checkpoint write", 1, "0" if previous_loads and identical else "LOST"),
                ("full disk during --export", 1, "0" if export_named else "LOST")], failures
    finally:
        subprocess.run(["umount", disk], check=False)


def broken_data(runner, tmp):
    data = os.path.join(tmp, "data_copy.npz")
    shutil.copy(runner.data, data)
    ck = os.path.join(tmp, "ck_data")
    reference = os.path.join(tmp, "reference.onnx")
    exported = os.path.join(tmp, "broken_data.onnx")
    proc = subprocess.Popen(runner.command("--checkpoint-dir", ck, "--checkpoint-every", "1", "--export", exported,
                                           data=data), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(ck, "checkpoint.npz")) and time.time() < deadline:
        time.sleep(0.005)
    with open(data, "r+b") as f:  # truncated mid-run: the file is no longer an archive
        f.truncate(100)
    _, stderr = proc.communicate()
    failures = 0
    kept_going = proc.returncode == 0 and same_weights(weights(exported), weights(reference))
    if not kept_going:
        print(f"run with its data file truncated mid-run: exit {proc.returncode}: {stderr.strip()}")
        failures += 1
    result = runner.run("--checkpoint-dir", ck, "--resume", data=data)
    named = result.returncode != 0 and "data_copy.npz" in result.stderr
    if not named or not checkpoint_loads(os.path.join(ck, "checkpoint.npz")):
        print(f"resume with a truncated data file: exit {result.returncode}: {result.stderr.strip()}")
        failures += 1
    return [("data file truncated mid-run", 1, "0" if kept_going and named else "LOST")], failures


def nan_batches(runner, tmp):
    failures = 0
    data = os.path.join(tmp, "nan.npz")
    make_dataset(data, nan_rows=(3, 40, 41, 200))
    exported = os.path.join(tmp, "nan.onnx")
    metrics = os.path.join(tmp, "nan.jsonl")
    ck = os.path.join(tmp, "ck_nan")
    result = runner.run("--checkpoint-dir", ck, "--checkpoint-every", "5", "--export", exported, "--metrics", metrics,
                        data=data)
    skipped = 0
    if result.returncode == 0:
        with open(metrics) as f:
            skipped = sum('"skipped":true' in line.replace(" ", "") for line in f)
    finite = result.returncode == 0 and all(np.all(np.isfinite(w)) for w in weights(exported).values())
    if not finite or skipped == 0 or not checkpoint_loads(os.path.join(ck, "checkpoint.npz")):
        print(f"NaN batches: exit {result.returncode}, skipped steps {skipped}, finite weights {finite}")
        failures += 1
    all_nan = os.path.join(tmp, "all_nan.npz")
    make_dataset(all_nan, all_nan=True)
    stopped = runner.run("--max-consecutive-skips", "3", data=all_nan)
    named = stopped.returncode != 0 and "skipped" in stopped.stderr and "non-finite" in stopped.stderr
    if not named:
        print(f"all-NaN data: exit {stopped.returncode}: {stopped.stderr.strip()}")
        failures += 1
    return [(f"NaN/inf batches ({skipped} steps skipped, weights finite)", 1, "0" if finite else "LOST"),
            ("every batch NaN: stops, names the cause", 1, "0" if named else "LOST")], failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.npz")
        make_dataset(data)
        runner = Runner(args.cli, os.path.join(args.models, "mlp_u64.onnx"), data)
        rows, failures = sigkill_trials(runner, tmp, args.trials, args.seed)
        for test in (full_disk, broken_data, nan_batches):
            more_rows, more_failures = test(runner, tmp)
            rows += more_rows
            failures += more_failures
    print("\n| fault | trials | data lost |\n|---|---|---|")
    for name, count, lost in rows:
        print(f"| {name} | {count} | {lost} |")
    print(f"\n{'FAILED' if failures else 'passed'}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
