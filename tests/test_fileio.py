"""perfmodel.fileio: atomic writes with the umask's permissions; perfmodel.lab.launcher: mpiexec's banner."""

import os
import stat

import pytest

from perfmodel.fileio import atomic_open, atomic_path, atomic_write_text, package_version, umask_mode
from perfmodel.lab.launcher import error_line


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize("mask, want", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_get_the_umask_mode(tmp_path, mask, want):
    old = os.umask(mask)
    try:
        assert umask_mode() == want
        atomic_write_text(tmp_path / "a.txt", "x")
        with atomic_open(tmp_path / "b.bin", "wb") as f:
            f.write(b"y")
        with atomic_path(tmp_path / "sub" / "c.png", suffix=".png") as tmp:
            assert tmp.suffix == ".png" and tmp.parent == tmp_path / "sub"
            tmp.write_bytes(b"z")
    finally:
        os.umask(old)
    for name in ("a.txt", "b.bin", "sub/c.png"):
        assert _mode(tmp_path / name) == want, name
    assert (tmp_path / "a.txt").read_text() == "x" and (tmp_path / "b.bin").read_bytes() == b"y"


def test_replacing_keeps_the_old_files_mode(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("old")
    os.chmod(p, 0o640)
    atomic_write_text(p, "new")
    assert p.read_text() == "new" and _mode(p) == 0o640


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path, exc):
    p = tmp_path / "t.txt"
    p.write_text("old")
    with pytest.raises(exc):
        with atomic_open(p, "w") as f:
            f.write("half")
            raise exc()
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.txt"]


def test_atomic_open_writes_whole_files_only(tmp_path):
    with pytest.raises(ValueError, match="whole files"):
        with atomic_open(tmp_path / "x", "a"):
            pass


def test_version_comes_from_metadata():
    import tomllib
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    try:
        installed = version("dsgd-scaling")
    except PackageNotFoundError:  # a checkout on PYTHONPATH, never installed
        assert package_version().startswith("unknown")
    else:
        assert package_version() == installed == pyproject["project"]["version"]
    assert package_version("no-such-distribution-xyz").startswith("unknown")


# Open MPI 5's banner after a rank exited with status 2, as captured from
# `mpiexec -n 2 python -m trainers.run run --model nosuch ...` on this machine
PRTE = """trainers: error: unknown model 'nosuch'; known models: lenet, gem-cnn
trainers: error: unknown model 'nosuch'; known models: lenet, gem-cnn
--------------------------------------------------------------------------
prterun detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: [prterun-vm-9205@1,1]
   Exit code:    2
--------------------------------------------------------------------------
"""
# Open MPI 4's wording
ORTE = """Traceback (most recent call last):
ValueError: boom
-------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
-------------------------------------------------------
--------------------------------------------------------------------------
mpiexec detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[1234,1],0]
  Exit code:    1
--------------------------------------------------------------------------
"""


def test_error_line_skips_the_launcher_banner():
    assert error_line(PRTE) == "trainers: error: unknown model 'nosuch'; known models: lenet, gem-cnn"
    assert error_line(ORTE) == "ValueError: boom"
    assert error_line("") == "(no output)"
    assert error_line("----------------------\nExit code: 2\n", "none") == "none"
