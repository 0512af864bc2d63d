"""perfmodel.lab.profile.linkfile: nccl-tests and OSU outputs (tests/data/links, written from their documented
formats) and `perfmodel profile --link` files as the link between nodes of `perfmodel predict --link-from`."""

import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.cli import main
from perfmodel.lab.profile.linkfile import load_links, parse_nccl_tests, parse_osu
from perfmodel.lab.profile.schema import ProfileError

ROOT = Path(__file__).resolve().parents[1]
LINKS = ROOT / "tests" / "data" / "links"
PROFILE = str(ROOT / "results" / "validation" / "profile_lenet_small.json")


def test_nccl_tests_all_reduce_perf_is_a_two_node_allreduce():
    prof = load_links([LINKS / "nccl_all_reduce_perf_2x1.txt"])
    (comm,) = prof.comm
    assert (comm.ranks, comm.backend, comm.hosts, comm.nodes) == (2, "mpi", ("node01", "node02"), 2)
    op = comm.ops["allreduce"]
    # the file's out-of-place times are 20 us + n / 10 GB/s, printed to 0.01 us
    assert op.sizes_bytes[0] == 8 and op.sizes_bytes[-1] == 8 * 4**12
    for n, t in zip(op.sizes_bytes, op.median_s):
        assert t == pytest.approx(20e-6 + n / 10e9, abs=0.006e-6)
    assert op.iters[0] == 20


def test_nccl_tests_all_gather_is_keyed_by_the_block():
    text = "\n".join([
        "# nThread 1 nGpus 1 minBytes 64 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 10 agg iters: 1",
        "#  Rank  0 Group  0 Pid  1 on  a device  0 [0x07] GPU", "#  Rank  1 Group  0 Pid  2 on  b device  0 [0x07] GPU",
        "#  Rank  2 Group  0 Pid  3 on  c device  0 [0x07] GPU", "#  Rank  3 Group  0 Pid  4 on  d device  0 [0x07] GPU",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "          64            16     float    none      -1    10.00    0.01    0.00      0    10.00    0.01    0.00      0",
        "         128            32     float    none      -1    12.00    0.01    0.01      0    12.00    0.01    0.01      0",
        "# all_gather_perf"])
    op_name, op, ranks, hosts = parse_nccl_tests(text)
    assert (op_name, ranks, hosts) == ("allgather", 4, ("a", "b", "c", "d"))
    assert op.sizes_bytes == (16, 32) and op.median_s == pytest.approx((10e-6, 12e-6))  # size / 4 ranks


def test_osu_outputs_give_allreduce_and_the_one_way_point_to_point_time():
    op_name, op, ranks = parse_osu((LINKS / "osu_allreduce_2x1.txt").read_text())
    assert (op_name, ranks) == ("allreduce", 2) and op.sizes_bytes[0] == 4
    assert op.time_at(4096) == pytest.approx(30e-6 + 4096 / 2.5e9, abs=0.006e-6)
    op_name, op, _ = parse_osu((LINKS / "osu_latency_2x1.txt").read_text())
    assert op_name == "pingpong" and 1 == op.sizes_bytes[0]  # size 0 skipped
    assert op.time_at(1024) == pytest.approx(1.5e-6 + 1024 / 5e9, abs=0.006e-6)
    op_name, op, _ = parse_osu((LINKS / "osu_bw_2x1.txt").read_text())
    # MB/s (10^6 B/s) with a window in flight: n / bandwidth, 5000 MB/s at large sizes
    assert op_name == "pingpong" and op.time_at(2**22) == pytest.approx(2**22 / 5000e6, rel=1e-4)


def test_several_files_merge_and_the_same_operation_twice_is_refused():
    prof = load_links([LINKS / "osu_allreduce_2x1.txt", LINKS / "osu_latency_2x1.txt"])
    (comm,) = prof.comm
    assert set(comm.ops) == {"allreduce", "pingpong"}
    with pytest.raises(ProfileError, match="a second file with pingpong"):
        load_links([LINKS / "osu_latency_2x1.txt", LINKS / "osu_bw_2x1.txt"])


@pytest.mark.parametrize("name, needle", [("garbage.txt", "neither a perfmodel profile nor nccl-tests or OSU"),
                                          ("missing.txt", "No such file")])
def test_a_file_that_is_no_link_is_one_line_and_exit_2(capsys, name, needle):
    code = main(["predict", "--profile", PROFILE, "--link-from", str(LINKS / name), "--gpus", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("perfmodel: error: ") and needle in err


def test_a_profile_without_communication_is_refused_as_a_link(tmp_path, capsys):
    # the one-process profile: nothing measured between ranks
    import dataclasses

    from perfmodel.lab.profile.profile_file import load_profile, save_profile

    one = dataclasses.replace(load_profile(PROFILE), comm=())
    save_profile(one, tmp_path / "one.json")
    code = main(["predict", "--profile", PROFILE, "--link-from", str(tmp_path / "one.json"), "--gpus", "2"])
    assert code == 2 and "measured no communication between ranks" in capsys.readouterr().err


def test_link_refuses_more_than_two_ranks(capsys):
    code = main(["profile", "--link", "--ranks", "4", "--out", "/nonexistent/x.json"])
    err = capsys.readouterr().err
    assert code == 2 and "--link measures 2 ranks, one on each of two nodes" in err


@pytest.mark.mpi
@pytest.mark.slow
def test_link_refuses_two_ranks_on_one_host(tmp_path):
    res = subprocess.run([sys.executable, "-m", "perfmodel.cli", "profile", "--link", "--max-bytes", "64",
                          "--comm-repeats", "3", "--ops", "allreduce", "--quiet", "--out", str(tmp_path / "l.json")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and "both ranks ran on" in res.stderr
    assert not (tmp_path / "l.json").exists()
