"""The launcher the reproduce scripts start their real runs with: set once from --launcher/--hostfile
(reproduce.common.run_tables), read by reproduce.runs.mpi_command (None: $DSGD_LAUNCHER, else mpiexec)."""

from __future__ import annotations

_LAUNCH: dict[str, str | None] = {"launcher": None, "hostfile": None}


def use_launcher(launcher: str | None, hostfile: str | None = None) -> None:
    """Start the runs with this launcher command line and hostfile (the scripts' --launcher/--hostfile;
    None: $DSGD_LAUNCHER, else mpiexec)."""
    _LAUNCH.update(launcher=launcher, hostfile=hostfile)


def launch_setting() -> tuple[str | None, str | None]:
    """(launcher command line, hostfile) as :func:`use_launcher` last set them."""
    return _LAUNCH["launcher"], _LAUNCH["hostfile"]
