"""Each model's training defaults: the learning rate and momentum its paper (or the example it comes
from) trained it with, so that ``trainers run`` and ``trainers simulate`` with those options left out
train instead of diverging (one setting for every network does not: lr 0.1 with Nesterov momentum 0.9,
the GEM network's, diverges LeNet within 10 gradients). An explicit --lr or --momentum always wins.

Pure Python; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TrainingDefaults", "TRAINING_DEFAULTS", "GENERIC", "defaults_for", "resolve"]


@dataclass(frozen=True)
class TrainingDefaults:
    """lr: learning rate per step; momentum: SGD momentum (0 none); source: where the values come from."""

    lr: float
    momentum: float
    source: str

    def __post_init__(self) -> None:
        if not self.lr > 0 or not 0 <= self.momentum < 1:
            raise ValueError(f"training defaults need lr > 0 and momentum in [0, 1), got {self.lr}, {self.momentum}")


TRAINING_DEFAULTS: dict[str, TrainingDefaults] = {
    "lenet": TrainingDefaults(0.01, 0.9, "Caffe examples/mnist/lenet_solver.prototxt (base_lr 0.01, momentum 0.9), "
                                         "TernGrad's MNIST runs"),
    "gem-cnn": TrainingDefaults(0.05, 0.9, "Hermans & Louppe 2018's MNIST runs as rerun here (reproduce/"
                                           "hermans2018.py DEFAULT_LR 0.05, momentum mu 0.9)"),
    "cifarnet": TrainingDefaults(0.1, 0.0, "TensorFlow CIFAR-10 tutorial (INITIAL_LEARNING_RATE 0.1, plain SGD), "
                                           "the net TernGrad's CifarNet is"),
    "cifar10-quick": TrainingDefaults(0.01, 0.9, "the reruns of Zhang et al. 2016 at small scale (reproduce/"
                                                 "zhang2016.py: lr 0.01, momentum 0.9); Caffe's cifar10_quick_solver "
                                                 "has 0.001 at batch 100, which leaves a batch-16 run at chance for "
                                                 "hundreds of steps"),
    "resnet20": TrainingDefaults(0.1, 0.9, "He et al. 2016 sec. 4.2 (lr 0.1, momentum 0.9, batch 128)"),
    "wrn-16-4": TrainingDefaults(0.1, 0.9, "Zagoruyko & Komodakis 2016 (lr 0.1, momentum 0.9)"),
    "alexnet": TrainingDefaults(0.01, 0.9, "Krizhevsky et al. 2012 (lr 0.01, momentum 0.9)"),
    "vgg-a": TrainingDefaults(0.01, 0.9, "Simonyan & Zisserman 2014 (lr 0.01, momentum 0.9)"),
    "googlenet": TrainingDefaults(0.01, 0.9, "Szegedy et al. 2015 (momentum 0.9; the paper gives no lr: 0.01, "
                                             "TF-slim's default)"),
    "resnet50": TrainingDefaults(0.1, 0.9, "He et al. 2016 sec. 3.4 (lr 0.1, momentum 0.9, batch 256)"),
}
"""Model name (trainers.models.MODELS) -> its training defaults."""

GENERIC = TrainingDefaults(0.01, 0.9, "trainers' generic default (no setting recorded for this model)")


def defaults_for(model: str) -> TrainingDefaults:
    """The model's training defaults (GENERIC for a model without a recorded setting)."""
    return TRAINING_DEFAULTS.get(model, GENERIC)


def resolve(model: str, lr: float | None, momentum: float | None) -> tuple[float, float, dict[str, str]]:
    """(lr, momentum, where each came from): a value given on the command line (not None) wins, else
    the model's default."""
    d = defaults_for(model)
    given = "the command line"
    sources = {"lr": given if lr is not None else f"{model}: {d.source}",
               "momentum": given if momentum is not None else f"{model}: {d.source}"}
    return (d.lr if lr is None else lr), (d.momentum if momentum is None else momentum), sources
