"""The kernel's network CPU time per byte (perfmodel.lab.profile.kernel_load) and its share of the cores
(perfmodel.lab.profile.kernel_share, perfmodel.lab.profile.predictor): cases worked by hand."""

import dataclasses
import os

import pytest

from perfmodel.cli import main
from perfmodel.lab.profile.kernel_load import cpu_counters, kernel_seconds
from perfmodel.lab.profile.kernel_share import MAX_LOAD_SHARE, core_stretch, host_link_bytes
from perfmodel.lab.profile.linkfile import load_links
from perfmodel.lab.profile.profile_file import load_profile, save_profile
from perfmodel.lab.profile.schema import KernelLoad
from tests.test_predictor import NCCL, PROFILE, _predict

HZ = os.sysconf("SC_CLK_TCK")

STAT = f"""cpu  {10 * HZ} 0 {3 * HZ} {50 * HZ} 0 {HZ} {2 * HZ} 0 0 0
cpu0 {5 * HZ} 0 {HZ} {25 * HZ} 0 0 {HZ} 0 0 0
intr 12345
"""


def test_cpu_counters_read_the_aggregate_line_in_seconds():
    c = cpu_counters(STAT)
    assert (c["user"], c["system"], c["idle"], c["irq"], c["softirq"]) == (10, 3, 50, 1, 2)
    later = cpu_counters(STAT.replace(f" {HZ} {2 * HZ} 0 0 0\ncpu0", f" {3 * HZ} {7 * HZ} 0 0 0\ncpu0")
                         .replace(f"cpu  {10 * HZ} 0 {3 * HZ}", f"cpu  {10 * HZ} 0 {4 * HZ}"))
    assert kernel_seconds(c, later) == (2 + 5, 1)  # irq + softirq, system
    with pytest.raises(ValueError, match="no aggregate"):
        cpu_counters("cpu0 1 2 3\n")


def test_kernel_load_per_byte_is_busy_less_idle_over_the_bytes():
    kl = KernelLoad(bytes_sent=100e6, busy_wall_s=2.0, busy_kernel_s=1.3, idle_wall_s=4.0, idle_kernel_s=0.2)
    assert kl.s_per_byte == pytest.approx((1.3 - 0.2 * 2.0 / 4.0) / 100e6)  # 12 ms per MB
    assert KernelLoad(1e6, 1.0, 0.0, 1.0, 0.5).s_per_byte == 0.0  # never below 0
    for bad in (dict(bytes_sent=0.0), dict(busy_kernel_s=-1.0), dict(idle_wall_s=float("nan"))):
        with pytest.raises(ValueError):
            KernelLoad(**{**dict(bytes_sent=1.0, busy_wall_s=1.0, busy_kernel_s=0.0, idle_wall_s=1.0,
                                 idle_kernel_s=0.0), **bad})


def test_host_link_bytes_count_each_nodes_ring_hop_less_the_links_own():
    # 3 emulated nodes of 1 rank on one machine: each sends `sent` over its link
    assert host_link_bytes(2.0e6, 3, 0, link_after=False) == 6.0e6
    # the link profile's step after an exchange holds its two nodes' sending `sent` each
    assert host_link_bytes(2.0e6, 3, 0, link_after=True) == 2.0e6
    assert host_link_bytes(2.0e6, 2, 0, link_after=True) == 0.0  # the 2-node layout is the link's own
    assert host_link_bytes(2.0e6, 4, 1, link_after=False) == 2.0e6  # real nodes: a machine carries its own
    assert host_link_bytes(2.0e6, 1, 0, link_after=False) == 0.0  # one node: nothing crosses
    with pytest.raises(ValueError):
        host_link_bytes(-1.0, 2, 0, link_after=False)


def test_core_stretch_is_the_cores_left_to_the_ranks():
    # 3 one-thread ranks on 2 cores with 0.4 of a core busy in the kernel: (3 / 1.6) / (3 / 2) = 1.25
    assert core_stretch(3, 1, 2, 0.4) == (pytest.approx(1.25), 0.4)
    assert core_stretch(1, 1, 2, 0.5)[0] == 1.0  # one rank still has a whole core
    assert core_stretch(2, 1, 4, 2.5)[0] == pytest.approx(2 / 1.5)  # 2 ranks on 1.5 free cores of 4
    f, lam = core_stretch(2, 1, 2, 5.0)  # capped at MAX_LOAD_SHARE of the cores
    assert lam == MAX_LOAD_SHARE * 2 and f == pytest.approx(2 / (2 - lam) / 1.0)
    with pytest.raises(ValueError):
        core_stretch(0, 1, 2, 0.0)


def _link_with_kernel_load(tmp_path, ms_per_mb: float) -> str:
    link = load_links([NCCL])
    (comm,) = link.comm
    kl = KernelLoad(bytes_sent=100e6, busy_wall_s=2.0, busy_kernel_s=ms_per_mb * 0.1, idle_wall_s=2.0,
                    idle_kernel_s=0.0)
    save_profile(dataclasses.replace(link, comm=(dataclasses.replace(comm, kernel_load=kl),)), tmp_path / "l.json")
    return str(tmp_path / "l.json")


def test_the_prediction_solves_the_stretch_at_its_own_step(tmp_path):
    """4 emulated nodes on 2 cores with kappa = 12 ms/MB: the compute is the plain prediction's times f,
    and f = stretch(kappa x 4 x sent / t_iter) at the returned step (the fixed point, by hand)."""
    link = _link_with_kernel_load(tmp_path, 12.0)
    common = ("--link-from", link, "--gpus", "4", "--batch", "16", "--strategy", "ssgd", "--overlap", "0",
              "--stragglers", "none", "--nodes-per-host", "all", "--cores", "2")
    (plain,), _ = _predict(*common, "--kernel-ms-per-mb", "0")
    (rec,), _ = _predict(*common)
    f = rec["t_compute_s"] / plain["t_compute_s"]
    load = 12e-9 * 4 * rec["bytes_per_gpu"] / rec["t_iter_s"]  # the NCCL link file timed no step after it
    assert f > 1.0
    assert f == pytest.approx(core_stretch(4, 1, 2, load)[0], rel=1e-9)
    assert rec["t_comm_s"] == pytest.approx(plain["t_comm_s"], rel=1e-12)
    # the option gives the same as the link's measurement
    (same,), _ = _predict(*common, "--kernel-ms-per-mb", "12")
    assert same["t_iter_s"] == pytest.approx(rec["t_iter_s"], rel=1e-9)


def test_real_nodes_with_a_core_each_are_not_stretched(tmp_path):
    """A machine carries its own node's traffic only: at 0.1 ms/MB that is well under one of its 2 cores,
    and its one rank keeps a core (at 12 ms/MB this 10 GB/s link would need more than its 2 cores)."""
    link = _link_with_kernel_load(tmp_path, 0.1)
    common = ("--link-from", link, "--gpus", "4", "--batch", "16", "--strategy", "ssgd", "--overlap", "0",
              "--stragglers", "none", "--cores", "2")  # one node per machine (the default with a link)
    (rec,), _ = _predict(*common)
    (plain,), _ = _predict(*common, "--kernel-ms-per-mb", "0")
    load = 0.1e-9 * rec["bytes_per_gpu"] / rec["t_iter_s"]
    assert 0 < load < 1
    assert rec["t_compute_s"] == plain["t_compute_s"]  # 1 rank on 2 cores less a fraction: still a core


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_bad_kernel_cost_is_one_line_exit_2(capsys, value):
    assert main(["predict", "--profile", PROFILE, "--link-from", NCCL, "--gpus", "2",
                 "--kernel-ms-per-mb", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--kernel-ms-per-mb" in err[0]


def test_the_option_needs_a_profile(capsys):
    assert main(["predict", "--cluster", "terngrad-ethernet", "--workload", "lenet", "--gpus", "2",
                 "--kernel-ms-per-mb", "5"]) == 2
    assert "--kernel-ms-per-mb" in capsys.readouterr().err


def test_profiles_round_trip_the_kernel_load(tmp_path):
    link = _link_with_kernel_load(tmp_path, 7.0)
    (comm,) = load_profile(link).comm
    assert comm.kernel_load.s_per_byte == pytest.approx(7e-9)


def test_validate_passes_the_kernel_cost_to_the_predict_command():
    from perfmodel.lab.validate import Scenario, predict_commands
    from reproduce import scale_out as so

    run = so.planned_run("ssgd", "", 3, 1, so.SCALE["small"])
    (argv, _), = predict_commands(run, Scenario("p.json", ("l.json",), 1, 0, 2, kernel_ms_per_mb=0.0))
    i = argv.index("--kernel-ms-per-mb")
    assert argv[i + 1] == "0.0"
    (argv, _), = predict_commands(run, Scenario("p.json", ("l.json",), 1, 0, 2))
    assert "--kernel-ms-per-mb" not in argv


def test_validate_refuses_a_bad_kernel_cost_in_one_line(capsys, tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text("{}\n")
    assert main(["validate", str(log), "--profile", PROFILE, "--kernel-ms-per-mb", "-2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--kernel-ms-per-mb" in err[0]


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_profile_refuses_a_bad_kernel_load_time_before_any_run(capsys, tmp_path, value):
    assert main(["profile", "--link", "--no-compute", "--kernel-load", value, "--out", str(tmp_path / "l.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--kernel-load" in err[0]
    assert not (tmp_path / "l.json").exists()
