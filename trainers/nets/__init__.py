"""The papers' networks in plain ``torch.nn`` (no torchvision), one family per module; the registry that
names them, their input shapes and sources is trainers.models.

    layers        the initialisers (Caffe xavier, Gaussian, He) and layers the networks share
    small_cnns    LeNet, the GEM CNN, CifarNet, cifar10_quick
    cifar_resnets ResNet-20 and WRN-16-4 for CIFAR
    imagenet      AlexNet, VGG-A, GoogLeNet, ResNet-50
"""
