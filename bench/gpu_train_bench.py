"""GPU training benchmark: our training step against PyTorch's, in one invocation.

For the guide's MLP (784-4096-4096-10, RMSprop) at batch 1024 and 8192 and a ResNet-50
exported from torchvision (batch 128, SGD with momentum 0.9), under float32 (TF32 off),
mixed_float16 and mixed_bfloat16, it times
  - ours: gpu_train_bench (the training and update graphs on the CUDA device, the batch
    kept on the device, the steady step captured in a CUDA graph), median of the timed
    steps; for the MLP also with --no-cuda-graph (every step eager), to show what the
    graph saves;
  - PyTorch: the same model and optimizer, eager, AMP as autocast (+ GradScaler for
    float16); for the MLP in bfloat16 also the whole step captured in a CUDA graph
    (capturable RMSprop), PyTorch's fastest form;
and prints a table of medians (ms per step) and ratios ours / PyTorch (below 1: we are
faster). Every run synchronises the device at the end of each timed step.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def make_models(out, skip_resnet):
    mlp = os.path.join(out, "mlp_u4096.onnx")
    if not os.path.exists(mlp):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_mlp.py"), "--units", "4096", "-o", mlp],
                       check=True)
    models = {"mlp": mlp}
    if not skip_resnet:
        resnet = os.path.join(out, "resnet50.onnx")
        if not os.path.exists(resnet):
            import torch
            import torchvision
            net = torchvision.models.resnet50(weights=None).train()
            # TRAINING keeps BatchNormalization (eval export folds it into the convolutions).
            torch.onnx.export(net, torch.randn(2, 3, 224, 224), resnet, opset_version=17,
                              training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                              input_names=["x"], output_names=["logits"],
                              dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
        models["resnet50"] = resnet
    return models


def ours(binary, model, policy, batch, optimizer, steps, warmup, eager=False):
    run = subprocess.run([binary, model, "--policy", policy, "--batch", str(batch), "--optimizer", optimizer,
                          "--steps", str(steps), "--warmup", str(warmup)] + (["--no-cuda-graph"] if eager else []),
                         capture_output=True, text=True)
    if run.returncode != 0:
        return {"error": run.stderr.strip()[-500:]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def torch_step_fn(torch, kind, batch, policy, graph):
    """A function that runs one training step, and the step's model/optimizer state."""
    device = "cuda"
    if kind == "mlp":
        net = torch.nn.Sequential(torch.nn.Linear(784, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                                  torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(device)
        x = torch.rand(batch, 784, device=device)
        classes = 10
        optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-3, alpha=0.9, eps=1e-7, capturable=graph)
    else:
        import torchvision
        net = torchvision.models.resnet50(weights=None).to(device).train()
        x = torch.rand(batch, 3, 224, 224, device=device)
        classes = 1000
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    y = torch.randint(0, classes, (batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()
    dtype = {"float32": None, "mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}[policy]
    scaler = torch.amp.GradScaler("cuda") if policy == "mixed_float16" else None

    def step():
        optimizer.zero_grad(set_to_none=not graph)
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = loss_fn(net(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss

    if not graph:
        return step
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cuda_graph):
        step()
    return cuda_graph.replay


def pytorch(kind, policy, batch, steps, warmup, graph=False):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    step = torch_step_fn(torch, kind, batch, policy, graph)
    times = []
    for i in range(warmup + steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": statistics.median(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-binary", required=True, help="gpu_train_bench")
    parser.add_argument("--out", required=True, help="folder for the models and bench.json")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--skip-resnet", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    models = make_models(args.out, args.skip_resnet)
    cases = [("mlp", 1024, "rmsprop"), ("mlp", 8192, "rmsprop")]
    if "resnet50" in models:
        cases.append(("resnet50", 128, "sgd"))
    rows = []
    for kind, batch, optimizer in cases:
        steps = args.steps if kind == "mlp" else max(10, args.steps // 3)
        for policy in POLICIES:
            mine = ours(args.bench_binary, models[kind], policy, batch, optimizer, steps, args.warmup)
            theirs = pytorch(kind, policy, batch, steps, args.warmup)
            row = {"model": kind, "batch": batch, "policy": policy, "ours": mine, "pytorch": theirs}
            if kind == "mlp":
                row["ours_eager"] = ours(args.bench_binary, models[kind], policy, batch, optimizer, steps,
                                         args.warmup, eager=True)
            if kind == "mlp" and policy == "mixed_bfloat16":
                row["pytorch_graph"] = pytorch(kind, policy, batch, steps, args.warmup, graph=True)
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\n{'model':<10}{'batch':>6} {'policy':<16}{'ours ms':>10}{'graph':>6}{'torch ms':>10}{'ratio':>8}"
          f"{'torch graph':>13}{'ratio':>8}{'ours eager':>12}{'graph/eager':>13}")
    for row in rows:
        mine = row["ours"].get("median_ms")
        theirs = row["pytorch"]["median_ms"]
        line = f"{row['model']:<10}{row['batch']:>6} {row['policy']:<16}"
        line += f"{mine:>10.3f}" if mine else f"{'error':>10}"
        line += f"{'yes' if row['ours'].get('cuda_graph') else 'no':>6}"
        line += f"{theirs:>10.3f}" + (f"{mine / theirs:>8.2f}" if mine else f"{'':>8}")
        if "pytorch_graph" in row:
            graph = row["pytorch_graph"]["median_ms"]
            line += f"{graph:>13.3f}" + (f"{mine / graph:>8.2f}" if mine else f"{'':>8}")
        else:
            line += f"{'':>21}"
        eager = row.get("ours_eager", {}).get("median_ms")
        if eager:
            line += f"{eager:>12.3f}" + (f"{mine / eager:>13.2f}" if mine else "")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
