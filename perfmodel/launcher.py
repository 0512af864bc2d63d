"""The one line worth showing from a failed ``mpiexec`` job, without the launcher's banner.

When a rank exits with a non-zero status, Open MPI's launcher (``mpiexec``/``prterun``) prints a
boxed banner after the rank's own output ("prterun detected that one or more processes exited with
non-zero status ... Process name ... Exit code"; older versions: "Primary job terminated normally, but
1 process returned a non-zero exit code"). Our launches capture the job's output and report the ranks'
own one-line error (``<prog>: error: ...``) instead; a user who starts ``mpiexec`` by hand sees that
line first and the banner below it.
"""

from __future__ import annotations

import re

#: a line of the launcher's banner, or of its per-rank prefixes, not of our programs
_BANNER = re.compile(
    r"^(-{10,}|={10,}"
    r"|prterun |mpiexec |mpirun |Primary job|a non-zero exit code|process returned|thus causing|"
    r"Per user-direction|the job to be terminated|The first process to do so was|"
    r"Process name:|Exit code:|Process ID:|Hostname:|Node:|Signal:|Local host:|"
    r"\[[^\]]*:\d+\] )")
_OURS = re.compile(r"^[\w./-]+: error: ")


def error_line(output: str, default: str = "(no output)") -> str:
    """The last ``<prog>: error: ...`` line of a job's output; else its last line that is not the
    launcher's banner; else ``default``."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    ours = [ln for ln in lines if _OURS.match(ln)]
    if ours:
        return ours[-1]
    rest = [ln for ln in lines if not _BANNER.match(ln)]
    return rest[-1] if rest else default
