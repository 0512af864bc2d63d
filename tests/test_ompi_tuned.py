"""Open MPI 5.0.x tuned's allreduce choice (perfmodel.ompi_tuned), checked by hand against the rules of
ompi_coll_tuned_allreduce_intra_dec_fixed (coll_tuned_decision_fixed.c, open-mpi/ompi v5.0.x b962e8a6),
and the `ompi` allreduce of the model built on it."""

import json

import numpy as np
import pytest

from perfmodel import collectives as coll
from perfmodel.cli import main
from perfmodel.mpi_algorithms import TUNED_IDS
from perfmodel.ompi_tuned import MODEL_NAME, RULES, allreduce_choice, allreduce_runs, model_algorithm
from perfmodel.scaling import _allreduce_bytes, predict
from perfmodel.specs import Cluster, ComputeTime, Link, SpecError, Strategy, Workload

# 4 GPUs per node; intra 2 us, 20 GB/s; host 1 us, 10 GB/s; network 10 us, 1.25 GB/s
CL = Cluster("c", 4, Link(2e-6, 2e10), Link(1e-6, 1e10), Link(1e-5, 1.25e9), gpu="gpu", host_memory_Bps=5e10)

RD, RING, SEG, RAB, NONOV = "recursive-doubling", "ring", "segmented-ring", "rabenseifner", "nonoverlapping"

# (p, n bytes, what the rules pick): each size bound of the commutative branch, one byte below and at it
STRADDLE = [
    # communicator_size < 4: if (total_dsize < 8) alg = 4; else if (< 4096) 3; else if (< 8192) 4;
    # else if (< 16384) 3; else if (< 65536) 4; else if (< 262144) 5; else 6
    (2, 7, RING), (2, 8, RD), (3, 4095, RD), (3, 4096, RING), (2, 8191, RING), (2, 8192, RD),
    (3, 16383, RD), (3, 16384, RING), (2, 65535, RING), (2, 65536, SEG), (2, 262143, SEG), (2, 262144, RAB),
    # communicator_size < 8: if (total_dsize < 16) alg = 4; else if (< 8192) 3; else 6
    (4, 15, RING), (4, 16, RD), (7, 8191, RD), (7, 8192, RAB),
    # communicator_size < 16: if (total_dsize < 8192) alg = 3; else 6
    (8, 8191, RD), (15, 8192, RAB),
    # communicator_size < 32: if (total_dsize < 64) alg = 5; else if (< 4096) 3; else 6
    (16, 63, SEG), (16, 64, RD), (31, 4095, RD), (31, 4096, RAB),
    # communicator_size < 64: if (total_dsize < 128) alg = 5; else 6
    (32, 127, SEG), (63, 128, RAB),
    # communicator_size < 128: if (total_dsize < 262144) alg = 3; else 6
    (64, 262143, RD), (127, 262144, RAB),
    # communicator_size < 256: if (total_dsize < 131072) alg = 2; else if (< 262144) 3; else 6
    (128, 131071, NONOV), (128, 131072, RD), (255, 262143, RD), (255, 262144, RAB),
    # communicator_size < 512: if (total_dsize < 4096) alg = 2; else 6
    (256, 4095, NONOV), (511, 4096, RAB),
    # communicator_size < 2048: if (total_dsize < 2048) alg = 2; else if (< 16384) 3; else 6
    (512, 2047, NONOV), (512, 2048, RD), (2047, 16383, RD), (2047, 16384, RAB),
    # communicator_size < 4096: if (total_dsize < 2048) alg = 2; else if (< 4096) 5; else if (< 16384) 3; else 6
    (2048, 2047, NONOV), (2048, 2048, SEG), (4095, 4095, SEG), (4095, 4096, RD), (3000, 16383, RD),
    (3000, 16384, RAB),
    # else: if (total_dsize < 2048) alg = 2; else if (< 16384) 5; else if (< 32768) 3; else 6
    (4096, 2047, NONOV), (4096, 2048, SEG), (8192, 16383, SEG), (8192, 16384, RD), (5000, 32767, RD),
    (5000, 32768, RAB),
]

# (n bytes, p one below a communicator bound, what it picks, p at the bound, what that picks)
P_STRADDLE = [
    (10, 3, RD, 4, RING),        # < 4: 8..4095 -> 3;            < 8: < 16 -> 4
    (10, 7, RING, 8, RD),        # < 8: < 16 -> 4;               < 16: < 8192 -> 3
    (10, 15, RD, 16, SEG),       # < 16: < 8192 -> 3;            < 32: < 64 -> 5
    (100, 31, RD, 32, SEG),      # < 32: 64..4095 -> 3;          < 64: < 128 -> 5
    (1000, 63, RAB, 64, RD),     # < 64: >= 128 -> 6;            < 128: < 262144 -> 3
    (1000, 127, RD, 128, NONOV),  # < 128: < 262144 -> 3;         < 256: < 131072 -> 2
    (10000, 255, NONOV, 256, RAB),  # < 256: < 131072 -> 2;       < 512: >= 4096 -> 6
    (3000, 511, NONOV, 512, RD),  # < 512: < 4096 -> 2;           < 2048: 2048..16383 -> 3
    (3000, 2047, RD, 2048, SEG),  # < 2048: 2048..16383 -> 3;     < 4096: 2048..4095 -> 5
    (5000, 4095, RD, 4096, SEG),  # < 4096: 4096..16383 -> 3;     else: 2048..16383 -> 5
]


@pytest.mark.parametrize("p,n,algo", STRADDLE)
def test_choice_on_both_sides_of_each_size_bound(p, n, algo):
    assert allreduce_choice(p, n) == algo


@pytest.mark.parametrize("n,p_lo,lo,p_hi,hi", P_STRADDLE)
def test_choice_on_both_sides_of_each_communicator_bound(n, p_lo, lo, p_hi, hi):
    assert allreduce_choice(p_lo, n) == lo and allreduce_choice(p_hi, n) == hi


def test_vectorized_choice_equals_scalar():
    p = np.array([p for p, _, _ in STRADDLE])
    n = np.array([n for _, n, _ in STRADDLE])
    assert list(allreduce_choice(p, n)) == [a for _, _, a in STRADDLE]
    grid = allreduce_choice(np.array([2, 64, 256])[:, None], np.array([100.0, 1e6]))  # broadcast: 3 x 2
    assert grid.tolist() == [[RD, RAB], [RD, RAB], [NONOV, RAB]]


def test_names_are_open_mpis_and_each_has_a_model_form():
    assert {a for _, cuts in RULES for _, a in cuts} <= set(TUNED_IDS["allreduce"])
    assert set(MODEL_NAME) == set(TUNED_IDS["allreduce"])
    for model in MODEL_NAME.values():  # every form the mapping names is one cluster_allreduce costs
        assert float(coll.cluster_allreduce(model, 1e6, 8, CL)) > 0


def test_fallbacks_on_the_element_count():
    # fixed rules pass segsize 0: one segment of the whole count, count < size x segcount -> plain ring
    assert allreduce_choice(2, 100000) == SEG and allreduce_runs(2, 100000) == RING
    # ring: "count less than size - use recursive doubling"; 4 bytes = 1 float32 on 2 ranks
    assert allreduce_choice(2, 4) == RING and allreduce_runs(2, 4) == RD
    assert allreduce_choice(3, 4096) == RING and allreduce_runs(3, 4096) == RING  # 1024 floats >= 3
    # p = 16, 60 bytes: segmented ring -> ring -> 15 floats < 16 ranks -> recursive doubling; 60 int8 >= 16
    assert allreduce_runs(16, 60) == RD and allreduce_runs(16, 60, itemsize=1) == RING
    # rabenseifner: count < nprocs_pof2 -> basic linear; p = 20000 has pof2 = 16384
    assert allreduce_choice(20000, 40000) == RAB and allreduce_runs(20000, 40000) == "basic-linear"  # 10000 floats
    assert allreduce_runs(20000, 65536) == RAB  # 16384 floats
    assert model_algorithm(np.array([2, 128, 20000]), np.array([100000, 1000, 40000])).tolist() == [
        "ring", "tree", "basic-linear"]
    with pytest.raises(SpecError):
        allreduce_choice(0, 10)
    with pytest.raises(SpecError):
        allreduce_choice(4, -1)
    with pytest.raises(SpecError):
        allreduce_runs(4, 10, itemsize=0)


def test_basic_linear_by_hand():
    # 8 GPUs = 2 nodes of 4: rank 0 hears 3 node peers on the intra link and 4 ranks on its network link,
    # then sends to them: 2 [3 (2 us + 1 MB / 20 GB/s) + 4 (10 us + 1 MB / 1.25 GB/s)]
    t = 2 * (3 * (2e-6 + 1e6 / 2e10) + 4 * (1e-5 + 1e6 / 1.25e9))
    assert t == pytest.approx(6.792e-3)
    assert float(coll.cluster_allreduce("basic-linear", 1e6, 8, CL)) == pytest.approx(t)
    # 6 GPUs: a full node and a half one, W - g = 2 remote ranks
    t6 = 2 * (3 * (2e-6 + 1e6 / 2e10) + 2 * (1e-5 + 1e6 / 1.25e9))
    assert float(coll.cluster_allreduce("basic-linear", 1e6, 6, CL)) == pytest.approx(t6)
    assert float(coll.cluster_allreduce("basic-linear", 1e6, 1, CL)) == 0.0
    # staged on the host: copies 2 (1 us + 1 MB / 10 GB/s); node peers through shared memory at 2 x 4 / B_mem
    # seconds per byte; rank 0 alone sums 7 MB, 3 bytes moved per byte
    staged = 2 * (1e-6 + 1e6 / 1e10) + 2 * (3 * (2e-6 + 1e6 * 8 / 5e10) + 4 * (1e-5 + 1e6 / 1.25e9)) + 3 * 7e6 / 5e10
    assert staged == pytest.approx(8.074e-3)
    assert float(coll.cluster_allreduce("basic-linear", 1e6, 8, CL, staging="host")) == pytest.approx(staged)


def test_ompi_by_hand_at_8_gpus():
    # p = 8, 1 MB: rules "< 16: >= 8192 -> 6" (Rabenseifner); one halving step across 2 nodes with the 4
    # ranks of a node sharing its link, n/2 each, two steps inside; the allgather mirrors it
    inter = 1e-5 + 4 * 1e6 * 0.5 / 1.25e9
    local = 2 * 2e-6 + 1e6 / 2 * 0.75 / 2e10
    assert float(coll.cluster_allreduce("ompi", 1e6, 8, CL)) == pytest.approx(2 * (inter + local))
    assert 2 * (inter + local) == pytest.approx(3.2655e-3)


@pytest.mark.parametrize("p,n,algo", STRADDLE)
def test_ompi_equals_the_chosen_algorithms_own_prediction(p, n, algo):
    model = MODEL_NAME[allreduce_runs(p, n)]
    assert float(coll.cluster_allreduce("ompi", n, p, CL)) == pytest.approx(
        float(coll.cluster_allreduce(model, n, p, CL)), rel=1e-12)
    assert float(coll.cluster_allreduce("ompi", n, p, CL, staging="host")) == pytest.approx(
        float(coll.cluster_allreduce(model, n, p, CL, staging="host")), rel=1e-12)
    assert float(_allreduce_bytes("ompi", n, np.array([float(p)]))[0]) == pytest.approx(
        float(_allreduce_bytes(model, n, np.array([float(p)]))[0]))


def test_ompi_vectorized_over_gpus_and_buckets():
    gpus = np.array([1, 2, 4, 8, 64, 128, 256, 512])
    sizes = np.array([[100.0], [3000.0], [2e5], [1e8]])  # the bucket schedule's (buckets, GPU counts) shape
    grid = coll.cluster_allreduce("ompi", sizes, gpus, CL)
    assert grid.shape == (4, 8) and np.all(grid[:, 0] == 0)
    for i, n in enumerate(sizes[:, 0]):
        for j, w in enumerate(gpus):
            assert grid[i, j] == pytest.approx(float(coll.cluster_allreduce("ompi", n, w, CL)), rel=1e-12)


def test_bytes_follow_the_algorithm_that_runs():
    w = np.array([64.0, 64.0, 128.0])
    n = np.array([1000.0, 1e6, 1000.0])
    # 64 ranks, 1000 B: recursive doubling, 6 steps of n; 1 MB: Rabenseifner 2(p-1)/p n;
    # 128 ranks, 1000 B: nonoverlapping as the tree, 2 x 7 steps of n
    assert _allreduce_bytes("ompi", n, w) == pytest.approx([6000.0, 2 * 63 / 64 * 1e6, 14000.0])


def _workload():
    return Workload("w", (1_000_000, 1_000, 3_000_000, 500, 40_000, 10),
                    {"gpu": ComputeTime("linear", t0_s=0.002, t1_s=0.001)})


def test_predict_ssgd_ompi_equals_the_chosen_algorithm():
    wl = _workload()  # 4 041 510 fp32 elements = 16.2 MB: Rabenseifner at every GPU count here
    gpus = [2, 8, 64]
    assert set(allreduce_choice(np.array(gpus), 4.0 * wl.parameters)) == {RAB}
    ours = predict(wl, CL, Strategy("ssgd", allreduce="ompi", overlap=0.0), gpus, batch=32)
    theirs = predict(wl, CL, Strategy("ssgd", allreduce="rabenseifner", overlap=0.0), gpus, batch=32)
    assert ours.t_comm_s == pytest.approx(theirs.t_comm_s, rel=1e-12)
    assert ours.bytes_per_gpu == pytest.approx(theirs.bytes_per_gpu, rel=1e-12)


def test_cli_accepts_allreduce_ompi(capsys):
    code = main(["predict", "--allreduce", "ompi", "--gpus", "2,4,8", "--workload", "resnet50",
                 "--cluster", "dgx1-v100", "--strategy", "ssgd,terngrad", "--format", "json"])
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert code == 0 and len(rows) == 6 and all(r["t_comm_s"] > 0 for r in rows), err
    code = main(["predict", "--allreduce", "ompi", "--staging", "host", "--gpus", "1,8", "--strategy", "ssgd",
                 "--format", "json"])
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert code == 0 and rows[0]["t_comm_s"] == 0 and rows[1]["t_comm_s"] > 0, err
