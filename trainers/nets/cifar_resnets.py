"""ResNets for CIFAR: ResNet-20 (He et al. 2016, option A shortcuts) and the wide ResNet WRN-16-4
(Zagoruyko and Komodakis 2016). Each returns logits."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from trainers.nets.layers import he_init_

__all__ = ["CifarResNet", "resnet20", "WideResNet", "wrn_16_4"]


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
        he_init_(self)

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
        he_init_(self)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer3(self.layer2(self.layer1(self.conv1(x))))
        x = F.relu(self.bn(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def wrn_16_4(num_classes: int = 10) -> nn.Module:
    """WRN-16-4 (no dropout): 2,748,890 parameters for 10 classes."""
    return WideResNet(16, 4, num_classes)
