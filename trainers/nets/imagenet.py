"""ImageNet networks: AlexNet and VGG-A (torchvision layouts and names), GoogLeNet (TF-slim Inception v1,
no auxiliary heads, as TernGrad ran it) and ResNet-50 (torchvision layout). Each returns logits."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from trainers.nets.layers import he_init_

__all__ = ["AlexNet", "alexnet", "VGG", "vgg_a", "GoogLeNet", "googlenet", "ResNet50", "resnet50"]


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
        he_init_(self, linear_std=0.01)

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
        he_init_(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet50(num_classes: int = 1000) -> nn.Module:
    """ResNet-50 for ImageNet: 25,557,032 parameters."""
    return ResNet50(num_classes)
