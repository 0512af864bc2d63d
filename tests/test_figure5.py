"""TernGrad Figure 5 with the presets: the paper's model reproduces the paper's two claims."""

import pytest

from perfmodel.presets import load_cluster, load_workload
from perfmodel.scaling import predict
from perfmodel.specs import Strategy

FIG5_BATCH = {"alexnet": 128, "googlenet": 64, "vgg-a": 32}  # per-GPU batch (docs/algorithms.md section 2, Figure 5 setting)


def gain(workload: str, cluster: str, gpus: int = 512) -> float:
    wl, cl = load_workload(workload), load_cluster(cluster)
    b = FIG5_BATCH[workload]
    fp32 = predict(wl, cl, Strategy("ssgd", allreduce="paper"), [gpus], batch=b)
    tern = predict(wl, cl, Strategy("terngrad", allreduce="paper"), [gpus], batch=b)
    return float(tern.throughput[0] / fp32.throughput[0])


def test_terngrad_about_doubles_vgg_a_on_128_infiniband_nodes():
    # "TernGrad is still able to double the training speed of VggNet-A on 128 nodes" (Fig. 5b), with the
    # pull charged at log2(2*512+1) bits per element as the paper's text says: about 2x, not more
    assert 1.8 <= gain("vgg-a", "terngrad-infiniband") <= 2.3


def test_paper_pull_is_what_limits_the_gain():
    # charging only the 2-bit push (the old form) would overstate the gain: the pull is 5x larger
    wl, cl = load_workload("vgg-a"), load_cluster("terngrad-infiniband")
    p = predict(wl, cl, Strategy("terngrad", allreduce="paper"), [512], batch=32)
    ssgd = predict(wl, cl, Strategy("ssgd", allreduce="paper"), [512], batch=32)
    # |theta|: 4 bytes per fp32 element against log2(1025) bits per ternary one, fp32 classifier
    ratio = float(ssgd.t_comm_s[0] / p.t_comm_s[0])
    assert 2.5 < ratio < 32 / 10.0


def test_terngrad_helps_alexnet_more_on_ethernet_than_on_infiniband():
    assert gain("alexnet", "terngrad-ethernet") > gain("alexnet", "terngrad-infiniband") > 1.0


def test_larger_communication_to_computation_ratio_gains_more():
    # "AlexNet and VggNet-A benefit more from TernGrad than GoogLeNet"
    for cluster in ("terngrad-ethernet", "terngrad-infiniband"):
        assert gain("googlenet", cluster) < min(gain("alexnet", cluster), gain("vgg-a", cluster))


@pytest.mark.parametrize("cluster", ["terngrad-ethernet", "terngrad-infiniband"])
def test_no_gain_on_one_gpu(cluster):
    assert gain("vgg-a", cluster, gpus=1) == pytest.approx(1.0)
