"""`perfmodel emulate`'s options given values tc or MPI cannot take, and a command that cannot run: one line,
exit 2, before any namespace, link or hosts line is made (the cluster's set-up fails the test if reached).

A sweep of the options (0, -1, nan, inf, 1e300, text, 10^23, a 400-digit rate) found these taken up to the
set-up: an infinite rate (an OverflowError traceback once the links were shaped), a rate below one byte per
second or above tc's 64-bit rate, a burst beyond tc's 32 bits, more ranks than MPI counts, and a command that
is a folder or no file at all (`-- ''`): each built the cluster first."""

from __future__ import annotations

import pytest

from perfmodel.cli import main
from perfmodel.lab import emulate as em


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(em.EmulatedCluster, "__enter__",
                        lambda self: pytest.fail("the emulated cluster was set up despite the bad input"))


@pytest.mark.parametrize("argv, fragment", [
    (["--rate", "9" * 400 + "gbit"], "rate '" + "9" * 400 + "gbit' is inf bit/s"),
    (["--rate", "99999999999tbit"], "rate '99999999999tbit' is 1e+23 bit/s; tc shapes a link to 8 bit/s"),
    (["--rate", "0.0000000001bit"], "rate '0.0000000001bit' is 1e-10 bit/s"),
    (["--rate", "7bit"], "rate '7bit' is 7 bit/s"),
    (["--rate", "nan"], "rate must look like 1gbit"),
    (["--rate", "-1gbit"], "rate must look like 1gbit"),
    (["--burst", "99999999999999999999999"], "burst_bytes must be an integer in 0..4294967295"),
    (["--burst", "-1"], "burst_bytes must be an integer in 0..4294967295 (tc's 32-bit burst), got -1"),
    (["--burst", "1e300"], "--burst: invalid int value: '1e300'"),
    (["--ranks-per-node", "99999999999999999999999"], "nodes x ranks_per_node must be <= 2147483647"),
    (["--ranks-per-node", "0"], "ranks_per_node must be a positive integer, got 0"),
    (["--nodes", "inf"], "--nodes: invalid int value: 'inf'"),
    (["--nodes", "201"], "nodes must be <= 200"),
])
def test_a_bad_option_is_one_line_and_exit_2_before_any_set_up(argv: list[str], fragment: str, no_cluster: None,
                                                               capsys: pytest.CaptureFixture) -> None:
    assert main(["emulate", *argv, "--", "true"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfmodel: error: "), lines
    assert fragment in lines[0], lines


@pytest.mark.parametrize("command", ["", "/", "/nonexistent/cmd", "no-such-command-xyz"])
def test_a_command_that_cannot_run_is_refused_before_any_set_up(command: str, no_cluster: None,
                                                                capsys: pytest.CaptureFixture) -> None:
    assert main(["emulate", "--", command, "arg"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"perfmodel: error: command not found (or not an executable file): {command!r}"]


def test_the_bounds_themselves_are_taken() -> None:
    assert em.parse_rate("8bit") == 8
    spec = em.EmulationSpec(nodes=2, ranks_per_node=1, rate_bps=em.RATE_MAX_BPS, burst_bytes=em.BURST_MAX_BYTES)
    assert spec.burst == 2**32 - 1
    for bad in ({"rate_bps": float("inf")}, {"rate_bps": float("nan")}, {"rate_bps": 4.0},
                {"burst_bytes": 2**32}, {"ranks_per_node": 2**30}):
        with pytest.raises(em.EmulateError):
            em.EmulationSpec(nodes=2, **bad)
