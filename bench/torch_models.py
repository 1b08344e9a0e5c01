"""PyTorch counterparts of the benchmark models, for the baselines of bench/cpu_bench.py.

- Mlp: the Keras guide's MLP as models/make_mlp.py writes it (784 -> U -> U -> 10,
  ReLU after the hidden layers; the Softmax is left to the loss, as onnx-amp trains).
- Cnn: models/make_cnn.py's CNN (conv3x3-BN-ReLU-maxpool twice, then a dense head);
  its BatchNormalization layers run in inference mode, as onnx-amp trains them.
- resnet18: ResNet-18 written the torchvision way (BasicBlock, [2, 2, 2, 2]), since
  torchvision is not a dependency; export_resnet18 writes it as ONNX.
"""

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, units, features=784, classes=10):
        super().__init__()
        self.dense1 = nn.Linear(features, units)
        self.dense2 = nn.Linear(units, units)
        self.dense3 = nn.Linear(units, classes)

    def forward(self, x):
        x = torch.relu(self.dense1(x))
        x = torch.relu(self.dense2(x))
        return self.dense3(x)


class Cnn(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16, eps=1e-3)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32, eps=1e-3)
        self.dense = nn.Linear(32 * 7 * 7, classes)

    def train(self, mode=True):
        super().train(mode)
        # Running statistics are not trained, as in onnx-amp's training of this model.
        self.bn1.eval()
        self.bn2.eval()
        return self

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = nn.functional.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.dense(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    def __init__(self, in_channels, channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or in_channels != channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, channels, 1, stride, bias=False),
                                            nn.BatchNorm2d(channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers = []
        in_channels = 64
        for channels, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(in_channels, channels, stride), BasicBlock(channels, channels, 1)))
            in_channels = channels
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def export_resnet18(path, image_size=112, seed=18):
    """Writes ResNet-18 (random weights, non-trivial BN statistics) with a dynamic batch."""
    torch.manual_seed(seed)
    model = ResNet18()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    model.eval()
    example = torch.randn(1, 3, image_size, image_size)
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Export ResNet-18 (torchvision layout) as ONNX")
    parser.add_argument("-o", "--output", required=True, help="ONNX file to write")
    parser.add_argument("--image-size", type=int, default=112)
    args = parser.parse_args()
    export_resnet18(args.output, args.image_size)
