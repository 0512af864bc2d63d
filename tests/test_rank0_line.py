"""trainers.errors.wait_for_rank0_line: under mpiexec, a rank other than 0 that exits with an error only rank
0 prints waits first, so that the launcher does not end the job before rank 0's one line is out."""

import pytest

from trainers import errors


@pytest.mark.parametrize("rank,slept", [(0, []), (1, [errors.RANK0_LINE_GRACE_S]), (7, [errors.RANK0_LINE_GRACE_S])])
def test_only_ranks_other_than_0_wait(monkeypatch, rank, slept):
    calls = []
    monkeypatch.setattr(errors.time, "sleep", calls.append)
    errors.wait_for_rank0_line(rank)
    assert calls == slept


def test_the_trainers_refusal_waits_on_rank_1_and_prints_nothing_there(monkeypatch, capsys):
    """`trainers` refusing its arguments as rank 1 of a job: no line (rank 0 prints it), status 2, after the wait."""
    from trainers.run import main

    calls = []
    monkeypatch.setattr(errors.time, "sleep", calls.append)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    bad = ["run", "--algo", "ssgd", "--model", "lenet", "--batch", "0"]
    assert main(bad) == 2
    assert capsys.readouterr().err == "" and calls == [errors.RANK0_LINE_GRACE_S]
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    assert main(bad) == 2
    assert capsys.readouterr().err.startswith("trainers: error: batch") and calls == [errors.RANK0_LINE_GRACE_S]
