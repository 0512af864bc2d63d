"""Small CNNs of the papers: Caffe's LeNet (MNIST), the GEM CNN, TensorFlow's CifarNet and Caffe's
cifar10_quick (CIFAR-10). Each returns logits."""

from __future__ import annotations

from torch import nn

from trainers.nets.layers import TFSameMaxPool, caffe_xavier_, gaussian_, named

__all__ = ["lenet", "gem_cnn", "cifarnet", "cifar10_quick"]


def lenet(num_classes: int = 10) -> nn.Module:
    """Caffe LeNet (examples/mnist/lenet_train_test.prototxt): 431,080 parameters on 1x28x28."""
    model = named(
        conv1=nn.Conv2d(1, 20, 5), pool1=nn.MaxPool2d(2, 2),
        conv2=nn.Conv2d(20, 50, 5), pool2=nn.MaxPool2d(2, 2),
        flatten=nn.Flatten(),
        ip1=nn.Linear(50 * 4 * 4, 500), relu1=nn.ReLU(inplace=True),
        ip2=nn.Linear(500, num_classes),
    )
    caffe_xavier_(model)
    return model


def gem_cnn(num_classes: int = 10) -> nn.Module:
    """GEM MNIST CNN (Hermans & Vilar 2018; docs/algorithms.md section 4): 163,790 parameters."""
    return named(
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
    model = named(
        conv1=conv1, relu1=nn.ReLU(inplace=True), pool1=TFSameMaxPool(3, 2),
        lrn1=nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0),
        conv2=conv2, relu2=nn.ReLU(inplace=True),
        lrn2=nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0), pool2=TFSameMaxPool(3, 2),
        flatten=nn.Flatten(),
        fc3=fc3, relu3=nn.ReLU(inplace=True),
        fc4=fc4, relu4=nn.ReLU(inplace=True),
        logits=logits,
    )
    # Initialisers of terngrad/inception/slim/models.py::cifar10_alexnet (truncated normal).
    gaussian_(conv1, 0.05, 0.0, truncated=True)
    gaussian_(conv2, 0.05, 0.1, truncated=True)
    gaussian_(fc3, 0.04, 0.1, truncated=True)
    gaussian_(fc4, 0.04, 0.1, truncated=True)
    gaussian_(logits, 1 / 192.0, 0.0, truncated=True)
    return model


def cifar10_quick(num_classes: int = 10) -> nn.Module:
    """Caffe cifar10_quick (examples/cifar10/cifar10_quick_train_test.prototxt): 145,578 params.

    Caffe pools round up (ceil_mode). As in the prototxt there is no ReLU between ip1 and ip2.
    """
    conv1 = nn.Conv2d(3, 32, 5, padding=2)
    conv2 = nn.Conv2d(32, 32, 5, padding=2)
    conv3 = nn.Conv2d(32, 64, 5, padding=2)
    ip1, ip2 = nn.Linear(64 * 4 * 4, 64), nn.Linear(64, num_classes)
    model = named(
        conv1=conv1, pool1=nn.MaxPool2d(3, 2, ceil_mode=True), relu1=nn.ReLU(inplace=True),
        conv2=conv2, relu2=nn.ReLU(inplace=True), pool2=nn.AvgPool2d(3, 2, ceil_mode=True),
        conv3=conv3, relu3=nn.ReLU(inplace=True), pool3=nn.AvgPool2d(3, 2, ceil_mode=True),
        flatten=nn.Flatten(), ip1=ip1, ip2=ip2,
    )
    # Fillers of the prototxt: gaussian std 1e-4 / 1e-2 / 1e-2 / 1e-1 / 1e-1, biases 0.
    for layer, std in ((conv1, 1e-4), (conv2, 1e-2), (conv3, 1e-2), (ip1, 0.1), (ip2, 0.1)):
        gaussian_(layer, std)
    return model
