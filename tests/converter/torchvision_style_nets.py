"""Two small torchvision-style convolutional nets, exported from PyTorch as a user would
(torch.onnx.export of an eval-mode model, opset 13 or 17), with deterministic weights:

- squeezenet: SqueezeNet 1.1's layout at a small size: a strided Conv, MaxPools with
  ceil_mode, Fire blocks (squeeze Conv 1x1 -> Relu -> expand 1x1 and 3x3 Convs -> Relu ->
  Concat), an AveragePool, and the classifier Dropout -> Conv 1x1 -> Relu ->
  GlobalAveragePool -> Flatten. The exporter drops an eval-mode Dropout, so it is put back
  in front of the classifier Conv as older exports of torchvision's SqueezeNet have it
  (an inference Dropout is the identity).
- unet: a two-level U-Net: Conv -> BatchNorm -> Relu blocks (the exporter folds the
  BatchNorms into the Convs), MaxPool down, Resize up (nearest, then bilinear) and Concat
  skip connections, a Conv 1x1 head.

Run: python torchvision_style_nets.py OUT_FOLDER  (writes {squeezenet,unet}_opset{13,17}.onnx)
"""
import os
import sys
import warnings

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import helper

OPSETS = (13, 17)
INPUT_SHAPES = {"squeezenet": (1, 3, 64, 64), "unet": (1, 3, 32, 32)}


class Fire(nn.Module):
    def __init__(self, channels, squeeze, expand1x1, expand3x3):
        super().__init__()
        self.squeeze = nn.Conv2d(channels, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 4, 8, 8), Fire(16, 4, 8, 8), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 8, 16, 16), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(nn.Conv2d(32, classes, 1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def block(inputs, outputs):
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1), nn.BatchNorm2d(outputs), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.enc1 = nn.Sequential(block(3, 8), block(8, 8))
        self.enc2 = block(8, 16)
        self.bottom = block(16, 32)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec2 = block(32 + 16, 16)
        self.dec1 = block(16 + 8, 8)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        bottom = self.bottom(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(bottom), e2], 1))
        up1 = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.head(self.dec1(torch.cat([up1, e1], 1)))


def make(name):
    torch.manual_seed(0)
    model = SqueezeNet() if name == "squeezenet" else UNet()
    # Trained BatchNorm statistics instead of the initial 0 / 1, so folding them matters.
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    return model.eval()


def add_classifier_dropout(model):
    """Puts the Dropout the exporter drops back in front of the last Conv."""
    graph = model.graph
    index, conv = [(i, n) for i, n in enumerate(graph.node) if n.op_type == "Conv"][-1]
    dropped = conv.input[0] + "_dropout"
    graph.node.insert(index, helper.make_node("Dropout", [conv.input[0]], [dropped], name="/classifier/Dropout"))
    conv.input[0] = dropped


def export(name, opset, folder):
    path = os.path.join(folder, f"{name}_opset{opset}.onnx")
    x = torch.randn(INPUT_SHAPES[name], generator=torch.Generator().manual_seed(1))
    output = "logits" if name == "squeezenet" else "mask"
    with warnings.catch_warnings():  # the exporter's advice on shape inference and constant folding
        warnings.simplefilter("ignore")
        torch.onnx.export(make(name), x, path, opset_version=opset, input_names=["image"], output_names=[output])
    if name == "squeezenet":
        model = onnx.load(path)
        add_classifier_dropout(model)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, path)
    return path


def export_all(folder):
    """Writes every net at every opset into `folder`; returns {(name, opset): path}."""
    os.makedirs(folder, exist_ok=True)
    return {(name, opset): export(name, opset, folder) for name in INPUT_SHAPES for opset in OPSETS}


if __name__ == "__main__":
    for path in export_all(sys.argv[1]).values():
        print(path)
