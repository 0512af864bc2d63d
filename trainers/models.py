"""The papers' networks in plain ``torch.nn`` (no torchvision), and a registry of them.

Every model returns logits (no softmax). Parameter counts are pinned by the tests against the
published figures; ``tensor_sizes`` gives the per-tensor gradient sizes that the performance model
reads (it builds on the ``meta`` device, so it allocates nothing and answers in milliseconds).

CLI::

    python -m trainers.models list
    python -m trainers.models export-tensors OUTDIR [--models lenet,resnet20]

Example::

    >>> from trainers.models import build_model, tensor_sizes
    >>> model = build_model("lenet")
    >>> sum(n for _, n in tensor_sizes("lenet"))
    431080
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ModelInfo",
    "MODELS",
    "build_model",
    "model_names",
    "input_shape",
    "tensor_sizes",
    "tensors_record",
    "export_tensors",
    "main",
]


# --------------------------------------------------------------------------- init helpers

def _caffe_xavier_(module: nn.Module) -> None:
    """Caffe's "xavier" filler: U(-sqrt(3/fan_in), +sqrt(3/fan_in)); bias constant 0."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            bound = math.sqrt(3.0 / fan_in)
            nn.init.uniform_(m.weight, -bound, bound)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def _gaussian_(layer: nn.Conv2d | nn.Linear, std: float, bias: float = 0.0,
               truncated: bool = False) -> None:
    """Gaussian (optionally truncated at 2 std, as TF's truncated_normal) weights, constant bias."""
    if truncated:
        nn.init.trunc_normal_(layer.weight, mean=0.0, std=std, a=-2 * std, b=2 * std)
    else:
        nn.init.normal_(layer.weight, mean=0.0, std=std)
    if layer.bias is not None:
        nn.init.constant_(layer.bias, bias)


def _he_init_(module: nn.Module, linear_std: float | None = None) -> None:
    """He et al. (2015) init: conv kaiming-normal (fan_out, relu), BN weight 1 bias 0."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and linear_std is not None:
            nn.init.normal_(m.weight, 0.0, linear_std)
            nn.init.zeros_(m.bias)


def _named(**layers: nn.Module) -> nn.Sequential:
    """nn.Sequential whose layers carry the source's names (conv1, pool1, ip1, ...)."""
    return nn.Sequential(OrderedDict(layers))


class _TFSameMaxPool(nn.Module):
    """Max pooling with TensorFlow 'SAME' padding (extra padding goes to the bottom/right)."""

    def __init__(self, kernel: int, stride: int) -> None:
        super().__init__()
        self.kernel, self.stride = kernel, stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = []
        for size in (x.shape[-1], x.shape[-2]):  # F.pad order: last dim first
            out = -(-size // self.stride)
            total = max((out - 1) * self.stride + self.kernel - size, 0)
            pads += [total // 2, total - total // 2]
        x = F.pad(x, pads, value=float("-inf"))
        return F.max_pool2d(x, self.kernel, self.stride)


# --------------------------------------------------------------------------- small CNNs

def lenet(num_classes: int = 10) -> nn.Module:
    """Caffe LeNet (examples/mnist/lenet_train_test.prototxt): 431,080 parameters on 1x28x28."""
    model = _named(
        conv1=nn.Conv2d(1, 20, 5), pool1=nn.MaxPool2d(2, 2),
        conv2=nn.Conv2d(20, 50, 5), pool2=nn.MaxPool2d(2, 2),
        flatten=nn.Flatten(),
        ip1=nn.Linear(50 * 4 * 4, 500), relu1=nn.ReLU(inplace=True),
        ip2=nn.Linear(500, num_classes),
    )
    _caffe_xavier_(model)
    return model


def gem_cnn(num_classes: int = 10) -> nn.Module:
    """GEM MNIST CNN (Hermans & Vilar 2018; docs/algorithms.md section 4): 163,790 parameters."""
    return _named(
        conv1=nn.Conv2d(1, 10, 5), pool1=nn.MaxPool2d(2), relu1=nn.ReLU(inplace=True),
        conv2=nn.Conv2d(10, 20, 5), drop2=nn.Dropout2d(), pool2=nn.MaxPool2d(2),
        relu2=nn.ReLU(inplace=True),
        flatten=nn.Flatten(),
        fc1=nn.Linear(320, 300), relu3=nn.ReLU(inplace=True),
        fc2=nn.Linear(300, 200), relu4=nn.ReLU(inplace=True),
        fc3=nn.Linear(200, num_classes),
    )


def cifarnet(num_classes: int = 10, image_size: int = 24) -> nn.Module:
    """TernGrad's CifarNet (`cifar10_alexnet`, the TF CIFAR-10 tutorial net).

    conv5x5 64 SAME, maxpool 3/2 SAME, LRN, conv5x5 64, LRN, maxpool 3/2, fc 384, fc 192, fc.
    TernGrad trains it on 24x24 crops (1,068,298 parameters); on uncropped 32x32 input the
    first fully connected layer grows and the net has 1,756,426 parameters.
    """
    if image_size < 4:
        raise ValueError(f"image_size must be >= 4 pixels, got {image_size}")
    pooled = -(-(-(-image_size // 2)) // 2)  # two SAME pools with stride 2: ceil(ceil(s/2)/2)
    # tf.nn.lrn(depth_radius=4, bias=1, alpha=0.001/9, beta=0.75) == torch LRN(size=9, alpha=0.001)
    conv1, conv2 = nn.Conv2d(3, 64, 5, padding=2), nn.Conv2d(64, 64, 5, padding=2)
    fc3, fc4 = nn.Linear(64 * pooled * pooled, 384), nn.Linear(384, 192)
    logits = nn.Linear(192, num_classes)
    model = _named(
        conv1=conv1, relu1=nn.ReLU(inplace=True), pool1=_TFSameMaxPool(3, 2),
        lrn1=nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0),
        conv2=conv2, relu2=nn.ReLU(inplace=True),
        lrn2=nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0), pool2=_TFSameMaxPool(3, 2),
        flatten=nn.Flatten(),
        fc3=fc3, relu3=nn.ReLU(inplace=True),
        fc4=fc4, relu4=nn.ReLU(inplace=True),
        logits=logits,
    )
    # Initialisers of terngrad/inception/slim/models.py::cifar10_alexnet (truncated normal).
    _gaussian_(conv1, 0.05, 0.0, truncated=True)
    _gaussian_(conv2, 0.05, 0.1, truncated=True)
    _gaussian_(fc3, 0.04, 0.1, truncated=True)
    _gaussian_(fc4, 0.04, 0.1, truncated=True)
    _gaussian_(logits, 1 / 192.0, 0.0, truncated=True)
    return model


def cifar10_quick(num_classes: int = 10) -> nn.Module:
    """Caffe cifar10_quick (examples/cifar10/cifar10_quick_train_test.prototxt): 145,578 params.

    Caffe pools round up (ceil_mode). As in the prototxt there is no ReLU between ip1 and ip2.
    """
    conv1 = nn.Conv2d(3, 32, 5, padding=2)
    conv2 = nn.Conv2d(32, 32, 5, padding=2)
    conv3 = nn.Conv2d(32, 64, 5, padding=2)
    ip1, ip2 = nn.Linear(64 * 4 * 4, 64), nn.Linear(64, num_classes)
    model = _named(
        conv1=conv1, pool1=nn.MaxPool2d(3, 2, ceil_mode=True), relu1=nn.ReLU(inplace=True),
        conv2=conv2, relu2=nn.ReLU(inplace=True), pool2=nn.AvgPool2d(3, 2, ceil_mode=True),
        conv3=conv3, relu3=nn.ReLU(inplace=True), pool3=nn.AvgPool2d(3, 2, ceil_mode=True),
        flatten=nn.Flatten(), ip1=ip1, ip2=ip2,
    )
    # Fillers of the prototxt: gaussian std 1e-4 / 1e-2 / 1e-2 / 1e-1 / 1e-1, biases 0.
    for layer, std in ((conv1, 1e-4), (conv2, 1e-2), (conv3, 1e-2), (ip1, 0.1), (ip2, 0.1)):
        _gaussian_(layer, std)
    return model


# --------------------------------------------------------------------------- CIFAR ResNets

class _CifarBasicBlock(nn.Module):
    """He et al. (2016) basic block with option-A shortcut (stride-2 subsample + zero channels)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride, self.extra = stride, cout - cin

    def _shortcut(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride != 1:
            x = x[:, :, :: self.stride, :: self.stride]
        if self.extra:
            x = F.pad(x, (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self._shortcut(x))


class CifarResNet(nn.Module):
    """CIFAR ResNet-(6n+2) of He et al. (2016) section 4.2: widths 16/32/64, option-A shortcuts."""

    def __init__(self, n: int = 3, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        cin = 16
        for stage, (cout, stride) in enumerate(((16, 1), (32, 2), (64, 2)), start=1):
            blocks = []
            for i in range(n):
                blocks.append(_CifarBasicBlock(cin, cout, stride if i == 0 else 1))
                cin = cout
            setattr(self, f"layer{stage}", nn.Sequential(*blocks))
        self.fc = nn.Linear(64, num_classes)
        _he_init_(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet20(num_classes: int = 10) -> nn.Module:
    """ResNet-20 for CIFAR (n=3, option A): 269,722 parameters."""
    return CifarResNet(3, num_classes)


class _WideBlock(nn.Module):
    """Pre-activation wide basic block (BN-ReLU-conv3x3 twice), 1x1 conv shortcut on change."""

    def __init__(self, cin: int, cout: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.shortcut = (nn.Conv2d(cin, cout, 1, stride, 0, bias=False)
                         if (cin != cout or stride != 1) else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = F.relu(self.bn1(x))
        y = self.conv1(o)
        y = self.conv2(self.dropout(F.relu(self.bn2(y))))
        return y + (self.shortcut(o) if self.shortcut is not None else x)


class WideResNet(nn.Module):
    """WRN-depth-k of Zagoruyko & Komodakis (2016): widths 16, 16k, 32k, 64k; pre-activation."""

    def __init__(self, depth: int = 16, k: int = 4, num_classes: int = 10,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"depth must be 6n+4 (10, 16, 22, 28, ...), got {depth}")
        n = (depth - 4) // 6
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        cin = 16
        for stage, (cout, stride) in enumerate(((16 * k, 1), (32 * k, 2), (64 * k, 2)), start=1):
            blocks = []
            for i in range(n):
                blocks.append(_WideBlock(cin, cout, stride if i == 0 else 1, dropout))
                cin = cout
            setattr(self, f"layer{stage}", nn.Sequential(*blocks))
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, num_classes)
        _he_init_(self)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer3(self.layer2(self.layer1(self.conv1(x))))
        x = F.relu(self.bn(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def wrn_16_4(num_classes: int = 10) -> nn.Module:
    """WRN-16-4 (no dropout): 2,748,890 parameters for 10 classes."""
    return WideResNet(16, 4, num_classes)


# --------------------------------------------------------------------------- ImageNet nets

class AlexNet(nn.Module):
    """Single-tower AlexNet (Krizhevsky 2014 "one weird trick"), torchvision layout and names."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d(6)
        self.classifier = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def alexnet(num_classes: int = 1000) -> nn.Module:
    """AlexNet for 3x224x224 input: 61,100,840 parameters."""
    return AlexNet(num_classes)


class VGG(nn.Module):
    """VGG of Simonyan & Zisserman (2014) without BN, torchvision layout and names."""

    CONFIG_A = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")

    def __init__(self, config: tuple = CONFIG_A, num_classes: int = 1000,
                 dropout: float = 0.5) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in config:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                cin = int(v)
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(7)
        self.classifier = nn.Sequential(
            nn.Linear(cin * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(dropout),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(dropout),
            nn.Linear(4096, num_classes),
        )
        _he_init_(self, linear_std=0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def vgg_a(num_classes: int = 1000) -> nn.Module:
    """VGG configuration A (VGG-11), no BN: 132,863,336 parameters."""
    return VGG(VGG.CONFIG_A, num_classes)


class _ConvBN(nn.Module):
    """conv (no bias) + BN(eps 1e-3) + ReLU, the unit of slim/torchvision Inception v1."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)), inplace=True)


class _Inception(nn.Module):
    """Inception module: 1x1 | 1x1->3x3 | 1x1->3x3 (slim's "5x5" branch) | maxpool->1x1."""

    def __init__(self, cin: int, c1: int, c3r: int, c3: int, c5r: int, c5: int, pp: int):
        super().__init__()
        self.branch1 = _ConvBN(cin, c1, 1)
        self.branch2 = nn.Sequential(_ConvBN(cin, c3r, 1), _ConvBN(c3r, c3, 3, padding=1))
        self.branch3 = nn.Sequential(_ConvBN(cin, c5r, 1), _ConvBN(c5r, c5, 3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), _ConvBN(cin, pp, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class GoogLeNet(nn.Module):
    """Inception v1 without auxiliary heads, as TernGrad ran it (TF-slim inception_v1).

    BN after every convolution and 3x3 kernels in the "5x5" branch (the slim/torchvision variant;
    torchvision names); 6,624,904 parameters for 1000 classes. The original paper's form (5x5
    kernels, conv biases, LRN, no BN) has about 7.0M.
    """

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        self.conv1 = _ConvBN(3, 64, 7, 2, 3)
        self.maxpool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = _ConvBN(64, 64, 1)
        self.conv3 = _ConvBN(64, 192, 3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.inception3a = _Inception(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = _Inception(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.inception4a = _Inception(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = _Inception(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = _Inception(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = _Inception(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = _Inception(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.inception5a = _Inception(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = _Inception(832, 384, 192, 384, 48, 128, 128)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(1024, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-0.02, b=0.02)
        nn.init.zeros_(self.fc.bias)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Output of inception5b: 1024 channels, 7x7 for 224x224 input."""
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        for name in ("inception4a", "inception4b", "inception4c", "inception4d", "inception4e"):
            x = getattr(self, name)(x)
        x = self.maxpool4(x)
        return self.inception5b(self.inception5a(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.fc(self.dropout(x))


def googlenet(num_classes: int = 1000) -> nn.Module:
    """GoogLeNet / Inception v1 (slim variant, no aux heads): 6,624,904 parameters."""
    return GoogLeNet(num_classes)


class _Bottleneck(nn.Module):
    """ResNet bottleneck 1x1-3x3-1x1 (stride on the 3x3, "v1.5"), projection shortcut on change."""

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                         nn.BatchNorm2d(cout))
                           if (stride != 1 or cin != cout) else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = self.downsample(x) if self.downsample is not None else x
        return F.relu(out + identity)


class ResNet50(nn.Module):
    """ResNet-50 (He et al. 2016, Table 1), torchvision layout and names: 25,557,032 params."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for stage, (width, blocks, stride) in enumerate(
                ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=1):
            layer = []
            for i in range(blocks):
                layer.append(_Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
            setattr(self, f"layer{stage}", nn.Sequential(*layer))
        self.fc = nn.Linear(2048, num_classes)
        _he_init_(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet50(num_classes: int = 1000) -> nn.Module:
    """ResNet-50 for ImageNet: 25,557,032 parameters."""
    return ResNet50(num_classes)


# --------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class ModelInfo:
    """A registered network: its builder, input shape (C, H, W) in pixels, classes, source."""

    name: str
    builder: Callable[[int], nn.Module]
    input_shape: tuple[int, int, int]
    num_classes: int
    dataset: str
    source: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must be a non-empty string")
        if (len(self.input_shape) != 3
                or not all(isinstance(v, int) and v > 0 for v in self.input_shape)):
            raise ValueError(f"input_shape must be three positive ints (C, H, W), "
                             f"got {self.input_shape!r}")
        if not isinstance(self.num_classes, int) or self.num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {self.num_classes!r}")
        if not callable(self.builder):
            raise ValueError("builder must be callable(num_classes) -> nn.Module")


_ENTRIES = (
    ModelInfo("lenet", lenet, (1, 28, 28), 10, "mnist",
              "Caffe LeNet, BVLC/caffe examples/mnist/lenet_train_test.prototxt, as named by "
              "TernGrad (Wen et al. 2017, sec. 4.1; the LeNet docstring of wenwei202/terngrad "
              "inception/slim/models.py). 431,080 parameters. Note: TernGrad's TF port pads its "
              "convolutions SAME, which would give 1,256,080."),
    ModelInfo("gem-cnn", gem_cnn, (1, 28, 28), 10, "mnist",
              "GEM MNIST CNN, Hermans & Louppe 2018 (hermans2018_gem), as restored in "
              "docs/algorithms.md section 4. 163,790 parameters."),
    ModelInfo("cifarnet", cifarnet, (3, 24, 24), 10, "cifar10",
              "TernGrad CifarNet (Wen et al. 2017, sec. 4.1) = cifar10_alexnet in "
              "wenwei202/terngrad inception/slim/models.py (the TensorFlow CIFAR-10 tutorial "
              "net) on 24x24 crops (run_multi_gpus_cifar10.sh IMAGE_SIZE=24). 1,068,298 "
              "parameters; 1,756,426 on uncropped 32x32 input."),
    ModelInfo("cifar10-quick", cifar10_quick, (3, 32, 32), 10, "cifar10",
              "Caffe cifar10_quick, BVLC/caffe examples/cifar10/cifar10_quick_train_test.prototxt; "
              "Zhang et al. 2016 use a CIFAR-10 net that 'closely mimics' the Caffe example. "
              "145,578 parameters."),
    ModelInfo("resnet20", resnet20, (3, 32, 32), 10, "cifar10",
              "He et al. 2016, Deep Residual Learning, sec. 4.2: ResNet-20 (n=3), option A "
              "identity shortcuts; used by Barkai et al. 2020. 269,722 parameters (0.27M)."),
    ModelInfo("wrn-16-4", wrn_16_4, (3, 32, 32), 10, "cifar10",
              "Zagoruyko & Komodakis 2016, Wide Residual Networks: WRN-16-4, no dropout "
              "(paper: 2.7M); used by Barkai et al. 2020. 2,748,890 parameters for 10 classes."),
    ModelInfo("alexnet", alexnet, (3, 224, 224), 1000, "imagenet",
              "Single-tower AlexNet (Krizhevsky 2014, 'One weird trick'), torchvision.models."
              "alexnet layout; TernGrad and Zhang et al. 2016 ImageNet model. 61,100,840 "
              "parameters."),
    ModelInfo("vgg-a", vgg_a, (3, 224, 224), 1000, "imagenet",
              "Simonyan & Zisserman 2014, VGG configuration A (VGG-11), no BN, torchvision vgg11 "
              "layout; TernGrad 'VggNet-A' (sec. 5). 132,863,336 parameters."),
    ModelInfo("googlenet", googlenet, (3, 224, 224), 1000, "imagenet",
              "Szegedy et al. 2015 Inception v1 without auxiliary heads, in the TF-slim "
              "inception_v1 form TernGrad ran (BN on every conv, 3x3 kernels in the '5x5' branch; "
              "= torchvision googlenet(aux_logits=False)). 6,624,904 parameters; the paper's "
              "original form has about 7.0M."),
    ModelInfo("resnet50", resnet50, (3, 224, 224), 1000, "imagenet",
              "He et al. 2016 ResNet-50, torchvision layout (stride on the 3x3 conv); DASO "
              "(Coquelin et al. 2021) and Barkai et al. 2020. 25,557,032 parameters."),
)

MODELS: dict[str, ModelInfo] = {info.name: info for info in _ENTRIES}


def model_names() -> list[str]:
    """Names of the registered models, in registry order."""
    return list(MODELS)


def _info(name: str) -> ModelInfo:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(MODELS)}") from None


def build_model(name: str, num_classes: int | None = None) -> nn.Module:
    """Build the registered network `name` (fresh random weights, float32, CPU).

    num_classes overrides the registry's class count (e.g. 100 for CIFAR-100).
    Raises ValueError naming the known models for an unknown name.
    """
    info = _info(name)
    if num_classes is None:
        num_classes = info.num_classes
    if not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
    return info.builder(num_classes)


def input_shape(name: str) -> tuple[int, int, int]:
    """Input shape (channels, height, width) in pixels that the model `name` expects."""
    return _info(name).input_shape


def tensor_sizes(name: str, num_classes: int | None = None) -> list[tuple[str, int]]:
    """(parameter name, number of elements) in `model.named_parameters()` order.

    Built on the meta device: no memory is allocated and no weights are initialised for real.
    """
    with torch.device("meta"):
        model = build_model(name, num_classes)
    return [(pname, int(p.numel())) for pname, p in model.named_parameters()]


# --------------------------------------------------------------------------- export CLI

def tensors_record(name: str) -> dict:
    """The JSON record of `name` written by export-tensors."""
    sizes = tensor_sizes(name)
    return {
        "workload": name,
        "parameters": sum(n for _, n in sizes),
        "tensors": [[pname, n] for pname, n in sizes],
        "source": _info(name).source,
    }


def _dumps_record(record: dict) -> str:
    """JSON text with one tensor per line (readable diffs)."""
    head = {k: v for k, v in record.items() if k != "tensors"}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    rows = ",\n".join(f"    {json.dumps(t)}" for t in record["tensors"])
    return "{\n" + "\n".join(lines) + '\n  "tensors": [\n' + rows + "\n  ]\n}\n"


def export_tensors(outdir: str | os.PathLike, names: list[str] | None = None) -> list[Path]:
    """Write OUTDIR/<name>.json for each model (all by default), atomically; return the paths."""
    from perfmodel.fileio import atomic_write_text

    names = model_names() if names is None else names
    for name in names:
        _info(name)  # validate all names before writing anything
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        path = out / f"{name}.json"
        atomic_write_text(path, _dumps_record(tensors_record(name)))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """`python -m trainers.models list | export-tensors OUTDIR [--models a,b]`."""
    parser = argparse.ArgumentParser(prog="python -m trainers.models",
                                     description="The papers' networks.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="name, parameters, input shape, dataset of every model")
    exp = sub.add_parser("export-tensors", help="write OUTDIR/<name>.json tensor-size files")
    exp.add_argument("outdir")
    exp.add_argument("--models", default=None, help="comma-separated names (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "list":
            for name in model_names():
                total = sum(n for _, n in tensor_sizes(name))
                info = MODELS[name]
                print(f"{name:14s} {total:>12,d}  {'x'.join(map(str, info.input_shape)):>11s}"
                      f"  {info.dataset}")
        else:
            names = None if args.models is None else [s.strip() for s in args.models.split(",")
                                                      if s.strip()]
            for path in export_tensors(args.outdir, names):
                print(path)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
