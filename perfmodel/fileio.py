"""Files written whole or not at all, with the user's normal permissions, and the installed version.

``atomic_write`` writes into a temporary file beside the target and renames it over the target, so a
reader (or a Ctrl-C) never sees half a file. ``tempfile.mkstemp`` creates its file with mode 0600
whatever the umask; the finished file is given the mode an ordinary ``open(path, "w")`` would have
given it: 0666 masked by the process umask (0644 under the usual umask 022), or the mode of the file it
replaces. Every package of the suite writes its outputs through this one helper (perfmodel is the
bottom layer, so trainers, reproduce and paper may import it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator


def umask_mode(base: int = 0o666) -> int:
    """The mode a new file created with ``base`` gets under the current umask."""
    mask = os.umask(0)
    os.umask(mask)
    return base & ~mask


def _final_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)  # keep the mode of the file we replace
    except FileNotFoundError:
        return umask_mode()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on normal exit it replaces ``path`` with ordinary
    permissions, on an exception (KeyboardInterrupt included) it is removed and ``path`` is untouched.

    For writers that take a file name (pandas, matplotlib, torch.save); ``suffix`` keeps the
    extension a writer may look at (e.g. ".png").
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _final_mode(path))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """``open`` for writing ("w" or "wb") into a temporary file that replaces ``path`` when the block ends
    without an exception."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', got {mode!r}")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as f:
        yield f
        f.flush()
        os.fsync(f.fileno())


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w", encoding=encoding) as f:
        f.write(text)


def package_version(dist: str = "dsgd-scaling") -> str:
    """The installed distribution's version from its metadata, or "unknown (not installed)"."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown (not installed; run from a source tree)"
