"""perfmodel.lab.profile.predictor: the one path from a profile (and a link) to a prediction, checked by hand
against the profile's own measurements."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from perfmodel.cli import main
from perfmodel.lab.profile.linkfile import load_links
from perfmodel.lab.profile.predictor import Layout, after_exchange_bytes
from perfmodel.lab.profile.profile_file import load_profile
from perfmodel.lab.profile.to_specs import profile_workload
from perfmodel.specs import SpecError

ROOT = Path(__file__).resolve().parents[1]
PROFILE = str(ROOT / "results" / "validation" / "profile_lenet_small.json")  # one machine: ranks 1, 2, 4
NCCL = str(ROOT / "tests" / "data" / "links" / "nccl_all_reduce_perf_2x1.txt")


def _predict(*args: str) -> tuple[list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["predict", "--profile", PROFILE, "--format", "json", *args])
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue()), err.getvalue()


def test_a_link_between_two_nodes_reproduces_its_allreduce_and_the_one_process_step():
    (rec,), _ = _predict("--link-from", NCCL, "--gpus", "2", "--batch", "64", "--strategy", "ssgd", "--overlap", "0")
    grad = 4 * 431_080
    # real nodes (one per machine by default with a link): each rank computes alone
    t_c = profile_workload(load_profile(PROFILE)).compute["cpu"](64.0)
    assert rec["t_compute_s"] == pytest.approx(float(t_c), rel=1e-12)
    # the 2-rank ring on the link inverted from the measured 2-rank Allreduce: that time at the gradient
    assert rec["t_comm_s"] == pytest.approx(20e-6 + grad / 10e9, rel=1e-4)
    assert rec["t_iter_s"] == pytest.approx(rec["t_compute_s"] + rec["t_comm_s"], rel=1e-12)


def test_four_nodes_extrapolate_the_two_node_ring_and_say_so():
    (rec,), err = _predict("--link-from", NCCL, "--gpus", "4", "--batch", "64", "--strategy", "ssgd", "--overlap", "0")
    op = load_links([NCCL]).comm[0].ops["allreduce"]
    grad = 4 * 431_080
    a2 = op.latency_from(8.0)  # the 2-rank ring: t2 = 2 alpha + n beta
    alpha, beta = a2 / 2, (op.time_at(grad) - a2) / grad
    assert rec["t_comm_s"] == pytest.approx(6 * alpha + 1.5 * grad * beta, rel=1e-9)  # 2(p-1) alpha + 2(p-1)/p n beta
    assert "network: measured at 2 ranks on 2 host(s); the model's collectives extrapolate it to 4 GPUs" in err


def test_ranks_sharing_the_cores_take_the_step_timed_on_as_many_ranks_at_once():
    prof = load_profile(PROFILE)
    conc = prof.comm_for("mpi", ranks=4).compute
    (rec,), err = _predict("--gpus", "4", "--batch", "64", "--strategy", "ssgd", "--overlap", "0", "--stragglers", "none")
    sent = rec["bytes_per_gpu"]
    assert rec["computing_ranks"] == 4 and "compute:" not in err
    # the step after the Allreduce that sends the strategy's bytes (the profile timed it at the gradient)
    assert rec["t_compute_s"] == pytest.approx(conc.after(64, after_exchange_bytes(sent, 4)), rel=1e-12)


def test_more_ranks_than_the_profile_timed_stretch_the_one_process_step_and_say_so():
    t_c = float(profile_workload(load_profile(PROFILE)).compute["cpu"](64.0))
    (rec,), err = _predict("--gpus", "8", "--batch", "64", "--strategy", "ssgd", "--overlap", "0")
    assert rec["t_compute_s"] == pytest.approx(8 / 2 * t_c, rel=1e-12)  # 8 ranks on 2 cores
    assert ("compute: the profile timed at most 4 rank(s) at once on 2 cores; the one-process step is stretched "
            "by ranks x threads / cores for 8 GPUs") in err
    # on real nodes of 2 ranks (one machine each) the ranks of a node share its cores only: the 2-rank step
    (real,), _ = _predict("--link-from", NCCL, "--gpus", "8", "--gpus-per-node", "2", "--batch", "64",
                          "--strategy", "ssgd", "--overlap", "0", "--stragglers", "none")
    conc = load_profile(PROFILE).comm_for("mpi", ranks=2).compute
    assert real["computing_ranks"] == 2
    assert real["t_compute_s"] == pytest.approx(conc.after(64, after_exchange_bytes(real["bytes_per_gpu"], 8)),
                                                rel=1e-12)


def test_the_parameter_server_applies_the_update_while_its_worker_waits():
    prof = load_profile(PROFILE)
    apply_s = sorted(r.step.median_s for r in prof.compute.rows)[len(prof.compute.rows) // 2]
    t_c = float(profile_workload(prof).compute["cpu"](64.0))
    link = str(ROOT / "tests" / "data" / "links" / "osu_latency_2x1.txt")  # point to point, as asgd sends
    (rec,), _ = _predict("--link-from", link, "--gpus", "2", "--batch", "64", "--strategy", "asgd")
    # 2 workers on nodes of their own: the one-process step; the optimizer step moves to the server
    assert rec["t_compute_s"] == pytest.approx(t_c - apply_s, rel=1e-9)
    (given,), _ = _predict("--link-from", link, "--gpus", "2", "--batch", "64", "--strategy", "asgd",
                           "--ps-update-ms", "0")
    assert given["t_compute_s"] == pytest.approx(t_c, rel=1e-9)
    # the worker's exchange: push and pull of the fp32 gradient, one way each, on the OSU latency link
    grad = 4 * 431_080
    op = load_links([link]).comm[0].ops["pingpong"]
    assert given["t_comm_s"] == pytest.approx(2 * op.time_at(grad), rel=1e-3)


def test_layout_is_validated():
    with pytest.raises(SpecError):
        Layout(gpus_per_node=0)
    with pytest.raises(SpecError):
        Layout(nodes_per_host=-1)
    assert Layout(gpus_per_node=2, nodes_per_host=0).computing(8, 2) == 8
    assert Layout(gpus_per_node=2, nodes_per_host=1).computing(8, 2) == 2


@pytest.mark.parametrize("args, needle", [
    (["--nodes-per-host", "0"], "--nodes-per-host must be 'all' or an integer >= 1"),
    (["--cores", "0"], "--cores must be >= 1"),
    (["--cluster", "terngrad-ethernet", "--nodes-per-host", "all"], "describe a cluster predicted from --profile"),
])
def test_bad_layouts_are_one_line_exit_2(capsys, args, needle):
    code = main(["predict", "--profile", PROFILE, "--gpus", "4", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err


def test_validate_says_when_the_load_differed_from_the_profiles(tmp_path):
    from perfmodel.lab.validate import RunMeasurement, load_note

    prof = load_profile(PROFILE)
    before = min(c.load_avg[0] for c in prof.comm if c.load_avg)

    def run(loads):
        return RunMeasurement("r", "ssgd", "lenet", 2, 64, 1, 10, 1.0, 0.5, 0.5, 0.0, 128.0, {}, {}, load_avg=loads)
    assert load_note(run((before + 0.9,)), prof, 2) is None  # within half the 2 cores
    note = load_note(run((before + 1.5, 3.0)), prof, 2)
    assert note.startswith("load: the machine's load average was") and f"{before:.1f} before the profile" in note
    assert load_note(run(()), prof, 2) is None  # a log written before the load was recorded


def test_gpu_ranks_are_not_stretched_by_the_cores(tmp_path):
    import dataclasses

    from perfmodel.lab.profile.profile_file import save_profile

    prof = load_profile(PROFILE)
    gpu = dataclasses.replace(prof, compute=dataclasses.replace(prof.compute, device="cuda"),
                              comm=tuple(dataclasses.replace(c, compute=None) for c in prof.comm))
    save_profile(gpu, tmp_path / "gpu.json")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["predict", "--profile", str(tmp_path / "gpu.json"), "--format", "json", "--gpus", "8",
                     "--batch", "64", "--strategy", "ssgd", "--overlap", "0", "--allreduce", "ring", "--stragglers", "none"]) == 0
    (rec,) = json.loads(out.getvalue())
    t_c = float(profile_workload(gpu).compute[next(iter(profile_workload(gpu).compute))](64.0))
    assert rec["t_compute_s"] == pytest.approx(t_c, rel=1e-12)  # 8 GPUs: one each, not 8 ranks on 2 cores


def test_a_link_that_timed_the_step_after_its_exchange_scales_the_node_step(tmp_path):
    """With a link profile whose two ranks timed the step after exchanges over it, the step after the
    job's exchange is the node's k-rank step times the link's after / barrier ratio at the bytes each
    rank sends (read at the link's Allreduce that sends as much: on 2 ranks, n)."""
    import dataclasses

    from perfmodel.lab.profile.profile_file import save_profile
    from perfmodel.lab.profile.schema import ConcurrentCompute

    node = load_profile(PROFILE)
    link = load_links([NCCL])
    (comm,) = link.comm
    slow = ConcurrentCompute(batches=(32, 64), mean_s=(0.010, 0.020), max_s=(0.010, 0.020), cv=(0.0, 0.0),
                             repeats=3, after_bytes=(1_000_000, 2_000_000),
                             after_mean_s=((0.012, 0.025), (0.013, 0.030)))
    prof = dataclasses.replace(link, comm=(dataclasses.replace(comm, compute=slow),))
    save_profile(prof, tmp_path / "link.json")
    (rec,), _ = _predict("--link-from", str(tmp_path / "link.json"), "--gpus", "2", "--batch", "64",
                         "--strategy", "ssgd", "--overlap", "0", "--stragglers", "none")
    sent = rec["bytes_per_gpu"]  # the 2-rank ring sends the whole gradient: 1,724,320 B
    assert sent == 4 * 431_080
    ratio = (0.025 + (0.030 - 0.025) * (sent - 1e6) / 1e6) / 0.020  # linear between the measured sizes
    t_c = float(profile_workload(node).compute["cpu"](64.0))  # real nodes: one rank computes alone
    assert rec["t_compute_s"] == pytest.approx(t_c * ratio, rel=1e-9)


def test_accumulation_from_a_profile_pays_the_update_and_the_slowed_step_once(tmp_path):
    """--accumulate A from a profile: A micro-batches, the optimizer step (the profile's median) once, and
    the link's slowdown after an exchange on the first micro-batch only: t_c ratio + (A - 1)(t_c - u)."""
    import dataclasses

    from perfmodel.lab.profile.profile_file import save_profile
    from perfmodel.lab.profile.schema import ConcurrentCompute
    from perfmodel.lab.profile.to_specs import optimizer_step_s

    node = load_profile(PROFILE)
    t_c = float(profile_workload(node).compute["cpu"](64.0))
    u = optimizer_step_s(node)
    assert 0 < u < t_c
    (one,), _ = _predict("--gpus", "1", "--batch", "64", "--strategy", "ssgd", "--accumulate", "4")
    assert one["t_compute_s"] == pytest.approx(4 * t_c - 3 * u, rel=1e-12)
    assert one["throughput"] == pytest.approx(4 * 64 / one["t_iter_s"], rel=1e-12)
    link = load_links([NCCL])
    (comm,) = link.comm
    slow = ConcurrentCompute(batches=(32, 64), mean_s=(0.010, 0.020), max_s=(0.010, 0.020), cv=(0.0, 0.0),
                             repeats=3, after_bytes=(1_000_000, 2_000_000),
                             after_mean_s=((0.012, 0.025), (0.013, 0.030)))
    save_profile(dataclasses.replace(link, comm=(dataclasses.replace(comm, compute=slow),)), tmp_path / "link.json")
    (rec,), err = _predict("--link-from", str(tmp_path / "link.json"), "--gpus", "2", "--batch", "64",
                           "--strategy", "ssgd", "--overlap", "0", "--stragglers", "none", "--accumulate", "4")
    ratio = (0.025 + (0.030 - 0.025) * (rec["bytes_per_gpu"] - 1e6) / 1e6) / 0.020
    assert rec["t_compute_s"] == pytest.approx(t_c * ratio + 3 * (t_c - u), rel=1e-9)
    assert rec["throughput"] == pytest.approx(2 * 4 * 64 / rec["t_iter_s"], rel=1e-12)


def test_accumulated_micro_batches_spread_independently():
    """Ranks sharing the cores: the profile's spread between ranks of one step (CV) is jitter, independent
    between micro-batches, so a step of A = 4 waits as with CV / 2 given by hand (--stragglers)."""
    conc = load_profile(PROFILE).comm_for("mpi", ranks=2).compute
    cv = conc.at(64)[2]
    assert cv > 0
    args = ("--gpus", "2", "--batch", "64", "--strategy", "ssgd", "--overlap", "0", "--accumulate", "4")
    (rec,), _ = _predict(*args)
    (half,), _ = _predict(*args, "--stragglers", repr(cv / 2))
    (whole,), _ = _predict(*args, "--stragglers", repr(cv))
    assert rec["t_straggler_s"] == pytest.approx(half["t_straggler_s"], rel=1e-12)
    assert 0 < rec["t_straggler_s"] < whole["t_straggler_s"]
    (one,), _ = _predict(*args[:-2])
    (one_cv,), _ = _predict(*args[:-2], "--stragglers", repr(cv))
    assert one["t_straggler_s"] == pytest.approx(one_cv["t_straggler_s"], rel=1e-12)  # A = 1: the profile's CV
