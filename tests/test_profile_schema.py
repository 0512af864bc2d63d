"""Profile JSON: round trip, atomic writes, one-line errors for bad files, and conversion to specs."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfmodel import collectives
from perfmodel.lab.profile.comm import summarize
from perfmodel.lab.profile.fit import fit_affine
from perfmodel.lab.profile.profile_file import load_profile, profile_from_dict, profile_to_dict, save_profile
from perfmodel.lab.profile.schema import (BUSBW_FACTORS, PS_ROUNDS, SCHEMA_VERSION, CodecTimes, CommProfile,
                                      ComputeProfile, ComputeRow, ConcurrentCompute, CopyTimes, Machine, ModelInfo,
                                      Profile, ProfileError, Stats, device_key, op_blocks)
from perfmodel.lab.profile.to_specs import profile_cluster, profile_links, profile_op_links, profile_workload
from perfmodel.specs import Cluster, Link

ROOT = Path(__file__).resolve().parents[1]
SIZES = [2**k for k in range(3, 27)]
ALPHA_OP, BW_OP = 4e-6, 3e9  # synthetic 2-rank Allreduce: t = alpha + n / bw
ALPHA_PP, BW_PP = 1.5e-6, 6e9  # synthetic ping-pong (one way)


def _stats(t, spread=0.05):
    return Stats(t, t * (1 - spread / 2), t * (1 + spread / 2), t * (1 - spread), t * (1 + spread), 10)


def _op(op, ranks, fn):
    rng = np.random.default_rng(len(op))
    samples = [list(fn(n) * rng.uniform(0.999, 1.001, 7)) for n in SIZES]
    return summarize(op, ranks, SIZES, samples, [1] * len(SIZES))


def make_profile(*, gpu=False, comm=True):
    info = ModelInfo(name="tiny", origin="module", input_shape=(1, 8, 8), num_classes=10,
                     tensor_names=("0.weight", "0.bias", "fc.weight", "fc.bias"),
                     tensor_sizes=(640, 10, 100, 10))
    t0, t1 = 2e-3, 5e-5
    rows = tuple(ComputeRow(b, _stats(0.4 * (t0 + t1 * b)), _stats(0.5 * (t0 + t1 * b)), _stats(0.1 * (t0 + t1 * b)),
                            _stats(t0 + t1 * b)) for b in (16, 32, 64))
    copy = CopyTimes(nbytes=info.gradient_bytes, d2h=_stats(1e-4), h2d=_stats(2e-4)) if gpu else None
    compute = ComputeProfile(device="cuda" if gpu else "cpu", key="h200" if gpu else "cpu",
                             device_name="NVIDIA H200" if gpu else "AMD EPYC", threads=1, warmup=3, repeats=10,
                             optimizer="SGD", rows=rows, fit=fit_affine([r.batch for r in rows],
                                                                        [r.total.median_s for r in rows]),
                             copy=copy)
    runs = [CommProfile(ranks=1, backend="mpi", library="", hosts=("h",), wall_s=0.0)]
    if comm:
        ops = {"pingpong": _op("pingpong", 2, lambda n: ALPHA_PP + n / BW_PP),
               "allreduce": _op("allreduce", 2, lambda n: ALPHA_OP + n / BW_OP)}
        runs.append(CommProfile(ranks=2, backend="mpi", library="Open MPI v5", hosts=("h",), wall_s=3.0, ops=ops,
                                load_avg=(0.1, 0.2)))
    machine = Machine(hostname="h", platform="Linux", python="3.11", cpu_model="AMD EPYC", cpu_cores=2,
                      cpu_affinity=2, torch_version="2.13", gpu_name="NVIDIA H200" if gpu else "",
                      gpu_count=1 if gpu else 0)
    return Profile(schema_version=SCHEMA_VERSION, created="2026-01-01T00:00:00+00:00", command="test",
                   machine=machine, model=info, compute=compute, comm=tuple(runs))


# ---------------------------------------------------------------- round trip and atomic writes


@pytest.mark.parametrize("gpu", [False, True])
def test_round_trip_is_exact(tmp_path, gpu):
    prof = make_profile(gpu=gpu)
    path = tmp_path / "p.json"
    save_profile(prof, path)
    back = load_profile(path)
    assert back == prof
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert profile_from_dict(profile_to_dict(prof)) == prof
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]  # no temporary left behind


def test_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "p.json"
    save_profile(make_profile(), path)
    before = path.read_text()
    broken = dataclasses.replace(make_profile(), compute=dataclasses.replace(
        make_profile().compute, fit=dataclasses.replace(make_profile().compute.fit, slope=float("nan"))))
    with pytest.raises(ValueError):
        save_profile(broken, path)  # JSON has no NaN: refused before anything is replaced
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


# ---------------------------------------------------------------- bad files: one clear line


def _bad_files(tmp_path):
    good = json.dumps(profile_to_dict(make_profile()), indent=1)
    data = profile_to_dict(make_profile())
    cases = {
        "truncated.json": (good[: len(good) // 2], "not valid JSON (truncated?)"),
        "empty.json": ("", "empty profile file"),
        "text.json": ("hello", "not valid JSON"),
        "list.json": ("[1, 2]", "not a perfmodel profile"),
        "version.json": (json.dumps(data | {"schema_version": 99}), "schema version 99, this perfmodel reads version 1"),
    }
    missing = json.loads(good)
    del missing["compute"]["fit"]["slope"]
    cases["missing.json"] = (json.dumps(missing), "missing field compute.fit.slope")
    wrong = json.loads(good)
    wrong["comm"][1]["ops"]["allreduce"]["median_s"][3] = "fast"
    cases["wrongtype.json"] = (json.dumps(wrong), "comm[1].ops.allreduce.median_s[3]: expected a number, got str")
    extra = json.loads(good)
    extra["machine"]["colour"] = "blue"
    cases["unknown.json"] = (json.dumps(extra), "machine: unknown field 'colour'")
    invalid = json.loads(good)
    invalid["compute"]["rows"][0]["total"]["min_s"] = 1.0  # min above the median
    cases["invalid.json"] = (json.dumps(invalid), "min <= p25 <= median")
    out = {}
    for name, (text, msg) in cases.items():
        (tmp_path / name).write_text(text)
        out[tmp_path / name] = msg
    out[tmp_path / "absent.json"] = "no such profile file"
    return out


def test_bad_profile_files_raise_one_line_naming_file_and_problem(tmp_path):
    for path, msg in _bad_files(tmp_path).items():
        with pytest.raises(ProfileError) as info:
            load_profile(path)
        text = str(info.value)
        assert "\n" not in text
        assert text.startswith(str(path)), text
        assert msg in text, text


def test_bad_profile_on_the_command_line_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "truncated.json"
    good = json.dumps(profile_to_dict(make_profile()))
    bad.write_text(good[:-40])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "perfmodel.lab.profile.cli", "show", str(bad)], capture_output=True,
                         text=True, timeout=60, env=env, cwd=tmp_path)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfmodel: error: ") and str(bad) in lines[0]
    assert "truncated" in lines[0] and "Traceback" not in res.stderr
    ok = tmp_path / "ok.json"
    save_profile(make_profile(), ok)
    res = subprocess.run([sys.executable, "-m", "perfmodel.lab.profile.cli", "show", str(ok)], capture_output=True,
                         text=True, timeout=60, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "allreduce fitted vs measured (2 ranks" in res.stdout


# ---------------------------------------------------------------- profile -> specs


def test_workload_from_profile_linear_and_table():
    prof = make_profile()
    wl = profile_workload(prof)
    ct = wl.compute["cpu"]
    assert ct.kind == "linear"
    assert ct.t0_s == pytest.approx(2e-3, rel=1e-6) and ct.t1_s == pytest.approx(5e-5, rel=1e-6)
    assert ct.copy_s == 0.0
    assert wl.tensor_sizes == (640, 10, 100, 10) and wl.parameters == 760
    assert wl.classifier_tensors == 2  # fc.weight, fc.bias
    assert wl.name == "tiny" and profile_workload(prof, "other").name == "other"
    table = profile_workload(prof, kind="table").compute["cpu"]
    assert table.kind == "table" and table.batches == (16, 32, 64)
    np.testing.assert_allclose(table(np.array([16, 32, 64])), [r.total.median_s for r in prof.compute.rows])


def test_gpu_workload_includes_the_copy_time_in_t_c():
    prof = make_profile(gpu=True)
    ct = profile_workload(prof).compute["h200"]
    assert ct.copy_s == pytest.approx(1e-4)
    # the spec's t includes the device->host copy: measured step + t_cg
    assert float(ct(32)) == pytest.approx(2e-3 + 5e-5 * 32 + 1e-4, rel=1e-6)
    links = profile_links(prof)
    assert "host" not in links  # no host_link fit in this synthetic profile


def test_network_link_from_allreduce_reproduces_the_measured_allreduce():
    prof = make_profile()
    link = profile_links(prof)["network"]
    p = 2
    # ring inversion: alpha_link = alpha_op / 2(p-1), beta_link = beta_op * p / 2(p-1)
    assert link.latency_s == pytest.approx(ALPHA_OP / (2 * (p - 1)), rel=1e-3)
    # (read at the gradient's 3040 bytes from the measured times, whose +-0.1% noise is up to ~1% of
    # the bandwidth term there)
    assert link.bandwidth_Bps == pytest.approx(BW_OP * 2 * (p - 1) / p, rel=1e-2)
    # independent path: perfmodel.collectives' ring formula on that link gives back the measurement
    ar = prof.comm_for("mpi").ops["allreduce"]
    model = collectives.ring_allreduce(np.array(ar.sizes_bytes), p, link.alpha, link.beta)
    np.testing.assert_allclose(model, ar.median_s, rtol=3e-3)


def test_network_link_from_pingpong_is_the_pingpong_fit():
    link = profile_links(make_profile(), network_from="pingpong")["network"]
    assert link.latency_s == pytest.approx(ALPHA_PP, rel=1e-3)
    assert link.bandwidth_Bps == pytest.approx(BW_PP, rel=1e-3)
    with pytest.raises(ProfileError, match="network_from"):
        profile_links(make_profile(), network_from="bcast")


def test_link_reproduces_the_piecewise_time_at_the_gradient_size():
    prof = make_profile()
    sizes = np.array(SIZES, dtype=float)
    two = np.where(sizes < 2**20, 2e-6 + sizes / 8e9, 5e-5 + sizes / 2e9)  # two regimes
    op = summarize("allreduce", 2, SIZES, [[t] * 5 for t in two], [1] * len(SIZES))
    assert len(op.fit.segments) == 2
    run = dataclasses.replace(prof.comm[1], ops={"allreduce": op})
    prof = dataclasses.replace(prof, comm=(prof.comm[0], run))
    small = profile_links(prof)["network"]  # the model's gradient is 3040 B: first regime
    assert small.latency_s == pytest.approx(1e-6, rel=1e-3)  # 2 us / 2(p-1)
    assert small.bandwidth_Bps == pytest.approx(8e9, rel=1e-3)
    for n in (3 * 2**20, 64 * 2**20, 2**30):  # inside, at the top of, and beyond the measured range
        link = profile_links(prof, nbytes=n)["network"]
        assert link.latency_s == pytest.approx(1e-6, rel=1e-3)
        ring = collectives.ring_allreduce(n, 2, link.alpha, link.beta)
        assert ring == pytest.approx(5e-5 + n / 2e9, rel=1e-3)
    no_model = dataclasses.replace(prof, model=None, compute=None)
    line = profile_links(no_model)["network"]  # one line over all sizes
    assert line.latency_s == pytest.approx(op.fit.alpha_s / 2)


def test_local_cluster_from_a_cpu_profile():
    prof = make_profile()
    cl = profile_cluster(prof)
    assert cl.name == "local" and cl.gpus_per_node == 1 and cl.gpu == "cpu"
    assert cl.network == profile_links(prof)["network"] and cl.intra == cl.network
    assert cl.host.latency_s == 0.0 and cl.host.beta == 0.0
    ct, scale, _ = profile_workload(prof).compute_for(cl)
    assert scale == 1.0 and ct.kind == "linear"


def test_profile_overrides_one_link_of_a_preset():
    slow = Link(50e-6, 1.25e8, "1 GbE")
    base = Cluster(name="preset", gpus_per_node=4, intra=Link(1e-5, 1e10), host=Link(1e-5, 1.2e10), network=slow,
                   gpu="gtx1080", source="paper")
    cl = profile_cluster(make_profile(), base)
    assert cl.network == profile_links(make_profile())["network"]
    assert (cl.intra, cl.host, cl.gpus_per_node, cl.gpu) == (base.intra, base.host, 4, "gtx1080")
    assert cl.source.startswith("paper; network from profile of h")
    with pytest.raises(ProfileError, match="did not measure the intra link"):
        profile_cluster(make_profile(), base, links=["intra"])
    with pytest.raises(ProfileError, match="link must be one of"):
        profile_cluster(make_profile(), base, links=["wan"])
    # the command line passes a comma string; "none" keeps the preset as it is
    assert profile_cluster(make_profile(), base, links="network") == cl
    assert profile_cluster(make_profile(), base, links="none") == base
    with pytest.raises(ProfileError, match="did not measure the host link"):
        profile_cluster(make_profile(), base, links="network,host")
    assert profile_cluster(make_profile(), None, links="intra").name == "local"  # ignored for local


def test_missing_measurements_are_named():
    with pytest.raises(ProfileError, match="--ranks 1,2"):
        profile_cluster(make_profile(comm=False))
    assert profile_links(make_profile(comm=False)) == {}
    with pytest.raises(ProfileError, match="no compute measurements"):
        profile_workload(dataclasses.replace(make_profile(), compute=None))


def test_bus_bandwidth_factors_follow_nccl_tests():
    assert [BUSBW_FACTORS["allreduce"](p) for p in (2, 4, 8)] == [1.0, 1.5, 1.75]
    assert BUSBW_FACTORS["bcast"](8) == BUSBW_FACTORS["reduce"](8) == BUSBW_FACTORS["pingpong"](2) == 1.0
    ar = _op("allreduce", 4, lambda n: 1e-6 + n / 1e9)
    np.testing.assert_allclose(ar.algbw_Bps, np.array(SIZES) / np.array(ar.median_s))
    np.testing.assert_allclose(ar.busbw_Bps, 1.5 * np.array(ar.algbw_Bps))


def test_block_operations_count_p_minus_1_blocks_on_the_bus():
    # OSU's size (one rank's block): nccl-tests' busbw = (p x block / t)(p-1)/p = (p-1) block / t
    assert [BUSBW_FACTORS[op](4) for op in ("allgather", "alltoall")] == [3.0, 3.0]
    ag = _op("allgather", 4, lambda n: 3 * (1e-6 + n / 1e9))
    np.testing.assert_allclose(ag.busbw_Bps, 3.0 * np.array(ag.algbw_Bps))


# ring Allgather and pairwise Alltoall on 4 ranks, one per node: t = 3 (alpha + n beta) per block of n bytes
AG_ALPHA, AG_BW, A2A_ALPHA, A2A_BW = 20e-6, 2e9, 30e-6, 1e9


def _with_block_ops(prof):
    ops = {"allreduce": _op("allreduce", 4, lambda n: 6 * 10e-6 + 1.5 * n / 3e9),
           "allgather": _op("allgather", 4, lambda n: 3 * (AG_ALPHA + n / AG_BW)),
           "alltoall": _op("alltoall", 4, lambda n: 3 * (A2A_ALPHA + n / A2A_BW))}
    four = CommProfile(ranks=4, backend="mpi", library="Open MPI v5", hosts=("a", "b", "c", "d"), wall_s=3.0, ops=ops)
    return dataclasses.replace(prof, comm=prof.comm + (four,))


def test_block_operation_links_reproduce_their_measurements():
    prof = _with_block_ops(make_profile())
    n_ag, n_a2a = 2**16, 2**12
    links = profile_op_links(prof, {"allgather": n_ag, "alltoall": n_a2a}, ranks=4)
    # inverted through t = (p-1)(alpha + n beta): the link is the per-step alpha and bandwidth
    assert links["allgather"].latency_s == pytest.approx(AG_ALPHA, rel=2e-2)
    assert links["allgather"].bandwidth_Bps == pytest.approx(AG_BW, rel=2e-2)
    # the independent path: perfmodel.collectives on a 4-node cluster carrying those links gives back
    # the measured times at the two blocks, where the allreduce-derived network link would not
    cl = profile_cluster(prof, ranks=4, op_bytes={"allgather": n_ag, "alltoall": n_a2a})
    assert dict(cl.network_ops) == links and cl.network_for("allreduce") == cl.network
    ag, a2a = prof.comm_for("mpi", 4).ops["allgather"], prof.comm_for("mpi", 4).ops["alltoall"]
    assert float(collectives.cluster_allgather(n_ag, 4, cl)) == pytest.approx(ag.time_at(n_ag), rel=1e-9)
    assert float(collectives.cluster_alltoall(n_a2a, 4, cl)) == pytest.approx(a2a.time_at(n_a2a), rel=1e-9)
    plain = profile_cluster(prof, ranks=4)
    assert plain.network_ops == ()
    assert float(collectives.cluster_allgather(n_ag, 4, plain)) != pytest.approx(ag.time_at(n_ag), rel=0.05)
    # an operation the profile did not measure: no link, the cluster falls back to its network link
    assert profile_op_links(make_profile(), {"allgather": n_ag}) == {}
    with pytest.raises(ProfileError, match="per-operation link for .allreduce.; they exist for allgather, alltoall, ps, global_iallreduce"):
        profile_op_links(prof, {"allreduce": 8})


GLOBAL_ALPHA, GLOBAL_BW = 30e-6, 1.2e7  # a ring over 2 nodes, one rank each


def _with_global_group(prof, hosts=("n0", "n1")):
    # 4 ranks on 2 nodes: the all-ranks Iallreduce, and DASO's global group (one rank per node), a
    # 2-rank ring: t = 2 (alpha + n/2 / bw)
    ops = {"allreduce": _op("allreduce", 4, lambda n: 6 * 40e-6 + 1.5 * n / 1.1e7),
           "iallreduce": _op("iallreduce", 4, lambda n: 6 * 40e-6 + 1.5 * n / 1.05e7),
           "global_iallreduce": _op("global_iallreduce", 2, lambda n: 2 * GLOBAL_ALPHA + n / GLOBAL_BW)}
    four = CommProfile(ranks=4, backend="mpi", library="Open MPI v5", hosts=hosts, wall_s=3.0, ops=ops)
    return dataclasses.replace(prof, comm=prof.comm + (four,))


def test_global_group_link_is_ring_inverted_over_the_nodes():
    prof = _with_global_group(make_profile())
    run = prof.comm_for("mpi", 4)
    assert run.nodes == 2
    n = 1724320.0
    link = profile_op_links(prof, {"global_iallreduce": n}, ranks=4)["global_iallreduce"]
    # latency: the fit's intercept over 2(M-1) = 2 steps; bandwidth: the ring formula on that latency
    # gives the measured time at n
    g = run.ops["global_iallreduce"]
    assert link.latency_s == pytest.approx(g.fit.latency_s / 2, rel=1e-12)
    assert link.latency_s == pytest.approx(GLOBAL_ALPHA, rel=2e-3)
    assert float(collectives.ring_allreduce(n, 2, link.alpha, link.beta)) == pytest.approx(g.time_at(n), rel=1e-9)
    assert link.bandwidth_Bps == pytest.approx(GLOBAL_BW, rel=2e-3)
    cl = profile_cluster(prof, ranks=4, op_bytes={"global_iallreduce": n})
    assert cl.network_for("global_iallreduce") == link and cl.network_for("allgather") == cl.network
    # the all-ranks runs of the same profile do not carry it; a profile without it gives no link
    assert profile_op_links(make_profile(), {"global_iallreduce": n}) == {}
    assert profile_op_links(prof, {"global_iallreduce": n}, ranks=2) == {}


@pytest.mark.parametrize("hosts", [("n0",), ("n0", "n1", "n2", "n3")])
def test_global_group_needs_several_nodes_with_several_ranks_on_some(hosts):
    with pytest.raises(ValueError, match="global_iallreduce runs on one rank per node"):
        _with_global_group(make_profile(), hosts)


def test_ring_latency_skips_the_sizes_below_one_element_per_rank():
    # Open MPI's ring Allreduce runs recursive doubling below one float32 per rank: at 4 ranks the
    # 8 B call (2 elements) takes 70 us, every ring call from 16 B on 190 us + n / 20 MB/s. The
    # latency of the ring link is the intercept of the calls from 16 B on over their 2(p-1) = 6
    # steps, not that of a segment through the 8 B call
    def t(n):
        return 70e-6 if n < 16 else 190e-6 + 1.5 * n / 2e7

    op = _op("allreduce", 4, t)
    assert op.fit.latency_s < 100e-6  # the stored fit starts with the 8 B call's algorithm
    assert op.latency_from(16) == pytest.approx(190e-6, rel=2e-3)
    assert op.latency_from(8) == op.latency_from(1e12) == op.fit.latency_s  # all sizes, or too few
    four = CommProfile(ranks=4, backend="mpi", library="Open MPI v5", hosts=("a", "b", "c", "d"), wall_s=1.0,
                       ops={"allreduce": op})
    prof = dataclasses.replace(make_profile(), comm=make_profile().comm + (four,))
    net = profile_links(prof, ranks=4, nbytes=2**20)["network"]
    assert net.latency_s == pytest.approx(190e-6 / 6, rel=2e-3)
    assert float(collectives.ring_allreduce(2**20, 4, net.alpha, net.beta)) == pytest.approx(op.time_at(2**20), rel=1e-9)
    # the 2-rank run: one element per rank is 8 B, its smallest size: the stored fit's intercept
    two = prof.comm_for("mpi", 2).ops["allreduce"]
    assert profile_links(prof, ranks=2, nbytes=2**20)["network"].latency_s == two.fit.latency_s / 2


PS_ALPHA, PS_BW = 40e-6, 1e8


def test_links_take_the_measured_time_at_their_size_not_the_fit():
    # a ring Allreduce on 4 ranks that runs at 3 GB/s up to 128 KiB and at half that from 256 KiB (a
    # protocol switch): one fitted segment may miss a size by up to 15%; the link read at 192 KiB
    # must reproduce the time measured there (midway between its neighbours: alpha-beta between them)
    def t(n):
        return 6 * 10e-6 + 1.5 * n / (3e9 if n <= 2**17 else 1.5e9)
    ar = _op("allreduce", 4, t)
    assert ar.time_at(2**17) == ar.median_s[SIZES.index(2**17)]  # a measured size: its median
    mid = 0.5 * (ar.median_s[SIZES.index(2**17)] + ar.median_s[SIZES.index(2**18)])
    assert ar.time_at(1.5 * 2**17) == pytest.approx(mid, rel=1e-12)
    assert ar.time_at(2**28) == pytest.approx(float(ar.fit.time(2**28)), rel=1e-12)  # beyond: the fit
    with pytest.raises(ValueError, match="nbytes must be > 0"):
        ar.time_at(0)
    four = CommProfile(ranks=4, backend="mpi", library="Open MPI v5", hosts=("a", "b", "c", "d"), wall_s=1.0,
                       ops={"allreduce": ar})
    prof = dataclasses.replace(make_profile(), comm=make_profile().comm + (four,))
    n = 1.5 * 2**17
    link = profile_links(prof, ranks=4, nbytes=n)["network"]
    ring = float(collectives.ring_allreduce(n, 4, link.alpha, link.beta))
    assert ring == pytest.approx(mid, rel=1e-9)


def test_parameter_server_link_reproduces_its_exchange():
    # 3 ranks: 2 workers, PS_ROUNDS = 2 pushes each; the server receives a push while the previous pull
    # leaves, so a call takes 2 x 2 + 1 = 5 exchange times; one worker alone alternates push and pull (4)
    assert PS_ROUNDS == 2 and op_blocks("ps", 3) == 5 and op_blocks("ps", 4) == 7 and op_blocks("ps", 2) == 4
    assert op_blocks("allgather", 4) == op_blocks("alltoall", 4) == 3
    assert BUSBW_FACTORS["ps"](3) == 4.0  # the bytes the server receives, 2 workers x 2 pushes, over t
    ops = {"pingpong": _op("pingpong", 3, lambda n: 30e-6 + n / 1.25e8),
           "ps": _op("ps", 3, lambda n: 5 * (PS_ALPHA + n / PS_BW))}
    three = CommProfile(ranks=3, backend="mpi", library="Open MPI v5", hosts=("a", "b", "c"), wall_s=3.0, ops=ops)
    prof = dataclasses.replace(make_profile(), comm=make_profile().comm + (three,))
    n = 2**20
    (link,) = profile_op_links(prof, {"ps": n}, ranks=3).values()
    assert link.latency_s == pytest.approx(PS_ALPHA, rel=2e-2) and link.bandwidth_Bps == pytest.approx(PS_BW, rel=2e-2)
    # the independent path: the model's server time per exchange on a cluster carrying that link is the
    # measured call over its 5 exchanges; without it, the ping-pong link's n beta (8.4 ms, not 10.5)
    cl = profile_cluster(prof, ranks=3, network_from="pingpong", op_bytes={"ps": n})
    _, server = collectives.ps_exchange(n, 2, cl, servers=1)
    assert float(server) == pytest.approx(ops["ps"].time_at(n) / 5, rel=1e-9)
    _, plain = collectives.ps_exchange(n, 2, profile_cluster(prof, ranks=3, network_from="pingpong"), servers=1)
    assert float(plain) == pytest.approx(n / 1.25e8, rel=2e-2)


def test_concurrent_compute_round_trips_and_interpolates(tmp_path):
    cc = ConcurrentCompute(batches=(4, 8, 16), mean_s=(2e-3, 3e-3, 5e-3), max_s=(2.5e-3, 3.6e-3, 6e-3),
                           cv=(0.2, 0.3, 0.1), repeats=10)
    assert cc.at(8) == pytest.approx((3e-3, 3.6e-3, 0.3))
    assert cc.at(12) == pytest.approx((4e-3, 4.8e-3, 0.2))  # halfway between 8 and 16
    assert cc.at(32) == pytest.approx((9e-3, 10.8e-3, 0.0))  # the last segment's line; cv not below 0
    prof = make_profile()
    two = dataclasses.replace(prof.comm[1], compute=cc)
    prof = dataclasses.replace(prof, comm=(prof.comm[0], two))
    save_profile(prof, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json").comm[1].compute == cc
    for bad, match in [({"max_s": (1e-3, 3.6e-3, 6e-3)}, "max_s must be >= mean_s"), ({"cv": (0.2, -0.1, 0.1)}, "cv"),
                       ({"batches": (8, 4, 16)}, "increasing"), ({"repeats": 2}, "repeats")]:
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(cc, **bad)


def test_codec_sync_wait_round_trips_and_is_checked(tmp_path):
    codec = CodecTimes(elements=650, encode=_stats(1e-3), decode=_stats(2e-3), workers=2, sync_wait_s=1.5e-3)
    cc = ConcurrentCompute(batches=(4, 8), mean_s=(2e-3, 3e-3), max_s=(2e-3, 3e-3), cv=(0.0, 0.0), repeats=10,
                           codec=codec)
    prof = make_profile()
    prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(prof.comm[1], compute=cc)))
    save_profile(prof, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json").comm[1].compute.codec.sync_wait_s == 1.5e-3
    from perfmodel.lab.profile.cli import format_summary

    assert "each synchronization point after its work 1.500 ms" in format_summary(prof)
    # profiles made before it was measured load without it
    data = json.loads((tmp_path / "p.json").read_text())
    del data["comm"][1]["compute"]["codec"]["sync_wait_s"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert load_profile(tmp_path / "old.json").comm[1].compute.codec.sync_wait_s is None
    for bad in (-1e-3, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="sync_wait_s"):
            dataclasses.replace(codec, sync_wait_s=bad)


def test_step_after_an_exchange_is_linear_in_its_bytes_from_the_barrier_alone(tmp_path):
    cc = ConcurrentCompute(batches=(4, 8), mean_s=(2e-3, 3e-3), max_s=(2e-3, 3e-3), cv=(0.0, 0.0), repeats=10,
                           after_bytes=(1000, 5000), after_mean_s=((3e-3, 4e-3), (4e-3, 6e-3)))
    assert cc.after(8, 0) == cc.after(8, -1) == cc.at(8)[0] == 3e-3  # no exchange: after the barrier alone
    assert cc.after(8, 500) == pytest.approx(3.5e-3)  # halfway between 0 B (3 ms) and 1000 B (4 ms)
    assert cc.after(8, 3000) == pytest.approx(5e-3)  # halfway between 1000 B (4 ms) and 5000 B (6 ms)
    assert cc.after(8, 1e9) == pytest.approx(6e-3)  # the largest size's time beyond it
    assert cc.after(6, 1000) == pytest.approx(3.5e-3)  # linear in the batch too
    assert dataclasses.replace(cc, after_bytes=(), after_mean_s=()).after(8, 3000) == 3e-3
    prof = make_profile()
    prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(prof.comm[1], compute=cc)))
    save_profile(prof, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json").comm[1].compute == cc
    for bad, match in [({"after_bytes": (5000, 1000)}, "increasing"), ({"after_bytes": (0, 1000)}, "positive"),
                       ({"after_mean_s": ((3e-3, 4e-3),)}, "2 values for each of the 2"),
                       ({"after_mean_s": ((3e-3,), (4e-3, 6e-3))}, "2 values"),
                       ({"after_mean_s": ((3e-3, 0.0), (4e-3, 6e-3))}, "finite and > 0")]:
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(cc, **bad)


@pytest.mark.parametrize("name,key", [("NVIDIA GeForce GTX 1080", "gtx1080"), ("Tesla P100-PCIE-16GB", "p100pcie16gb"),
                                      ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-40GB", "a100sxm440gb")])
def test_device_key(name, key):
    assert device_key(name) == key


def test_records_validate_on_creation():
    with pytest.raises(ValueError, match="min <= p25"):
        Stats(1.0, 2.0, 3.0, 0.5, 4.0, 3)
    with pytest.raises(ValueError, match="strictly increasing"):
        dataclasses.replace(make_profile().compute, rows=make_profile().compute.rows[::-1])
    with pytest.raises(ValueError, match="one-rank"):
        CommProfile(ranks=1, backend="mpi", library="", hosts=(), wall_s=0.0, ops=make_profile().comm[1].ops)
    with pytest.raises(ValueError, match="unknown backend"):
        CommProfile(ranks=2, backend="tcp", library="", hosts=(), wall_s=0.0)
    with pytest.raises(ValueError, match="schema version"):
        dataclasses.replace(make_profile(), schema_version=2)


def test_importing_the_profile_package_stays_light():
    code = ("import sys, perfmodel, perfmodel.lab.profile, perfmodel.lab.profile.schema, perfmodel.lab.profile.fit, "
            "perfmodel.lab.profile.profile_file, perfmodel.lab.profile.to_specs, "
            "perfmodel.lab.profile.comm, perfmodel.lab.profile.cli; "
            "bad = [m for m in ('torch', 'mpi4py') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 0, res.stdout + res.stderr
