"""The initialisers and layers the papers' networks share: Caffe's "xavier" filler, Gaussian and He
initialisation, named nn.Sequential, and TensorFlow 'SAME' max pooling."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["caffe_xavier_", "gaussian_", "he_init_", "named", "TFSameMaxPool"]


def caffe_xavier_(module: nn.Module) -> None:
    """Caffe's "xavier" filler: U(-sqrt(3/fan_in), +sqrt(3/fan_in)); bias constant 0."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            bound = math.sqrt(3.0 / fan_in)
            nn.init.uniform_(m.weight, -bound, bound)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def gaussian_(layer: nn.Conv2d | nn.Linear, std: float, bias: float = 0.0,
               truncated: bool = False) -> None:
    """Gaussian (optionally truncated at 2 std, as TF's truncated_normal) weights, constant bias."""
    if truncated:
        nn.init.trunc_normal_(layer.weight, mean=0.0, std=std, a=-2 * std, b=2 * std)
    else:
        nn.init.normal_(layer.weight, mean=0.0, std=std)
    if layer.bias is not None:
        nn.init.constant_(layer.bias, bias)


def he_init_(module: nn.Module, linear_std: float | None = None) -> None:
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


def named(**layers: nn.Module) -> nn.Sequential:
    """nn.Sequential whose layers carry the source's names (conv1, pool1, ip1, ...)."""
    return nn.Sequential(OrderedDict(layers))


class TFSameMaxPool(nn.Module):
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
