"""The network between two nodes from a file: a `perfmodel profile --link` profile, nccl-tests output or
OSU micro-benchmark output (format detected from the text).

- nccl-tests (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md): `all_reduce_perf`, `all_gather_perf`,
  `alltoall_perf`. The table's data lines are ``size count type [redop] [root] time algbw busbw #wrong
  time algbw busbw #wrong`` (out-of-place, then in-place); the out-of-place time (microseconds) is read.
  Ranks: the ``#  Rank N ... on HOST device ...`` lines (their hosts are the nodes). The collective is
  told by its file's header line (``all_reduce_perf``, ``all_gather_perf``, ``alltoall_perf``) or by
  the columns: a ``redop`` column means a reduction. all_gather_perf's and alltoall_perf's size is the
  whole buffer (p blocks); the block, size / p, is what the profile's Allgather and Alltoall are keyed by.
- OSU (mvapich.cse.ohio-state.edu/benchmarks): ``# OSU MPI Allreduce Latency Test``,
  ``# OSU MPI Non-blocking Allreduce Latency Test``, ``# OSU MPI Allgather Latency Test``, ``# OSU MPI
  All-to-All Personalized Exchange Latency Test``, ``# OSU MPI Latency Test`` (one-way latency: half
  the round trip) and ``# OSU MPI Bandwidth Test`` (MB/s, 10^6 bytes per second; a window of messages
  in flight hides the latency, so the one-way time it stands for is size / bandwidth). Data lines:
  ``size value [min max iterations]``; a size of 0 is skipped. OSU's output does not print the rank
  count: a collective's file is read as 2 ranks on 2 nodes, the link between two nodes this option is
  for (osu_latency and osu_bw always run on 2).

Each file gives one operation; several files merge into one CommProfile per rank count. A time is one
figure per size, so every statistic (median, quartiles, extremes) is that figure. A file that is none of
these formats, or holds no data line, is refused with one line (ProfileError).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .fit import fit_alpha_beta
from .profile_file import profile_from_dict
from .schema import BUSBW_FACTORS, SCHEMA_VERSION, CommProfile, Machine, OpProfile, Profile, ProfileError

__all__ = ["load_links", "parse_nccl_tests", "parse_osu"]

#: OSU headers -> the profile's operation (longest first: "Non-blocking Allreduce" before "Allreduce").
OSU_TESTS = (("non-blocking allreduce", "iallreduce"), ("allreduce", "allreduce"), ("allgather", "allgather"),
             ("all-to-all", "alltoall"), ("alltoall", "alltoall"), ("bandwidth test", "bandwidth"),
             ("latency test", "pingpong"))
NCCL_TESTS = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather", "alltoall_perf": "alltoall"}


def _op_profile(op: str, sizes: list[int], times: list[float], ranks: int, iters: int) -> OpProfile:
    pairs = sorted({n: t for n, t in zip(sizes, times)}.items())
    if not pairs:
        raise ProfileError(f"no data lines for {op}")
    sizes_t = tuple(n for n, _ in pairs)
    t = tuple(x for _, x in pairs)
    algbw = tuple(n / x for n, x in pairs)
    factor = BUSBW_FACTORS[op](ranks)
    return OpProfile(op=op, sizes_bytes=sizes_t, median_s=t, p25_s=t, p75_s=t, min_s=t, max_s=t,
                     iters=tuple(iters for _ in t), repeats=1, algbw_Bps=algbw,
                     busbw_Bps=tuple(a * factor for a in algbw), fit=fit_alpha_beta(list(sizes_t), list(t)),
                     timing="back-to-back")


def parse_nccl_tests(text: str, where: str = "nccl-tests output") -> tuple[str, OpProfile, int, tuple[str, ...]]:
    """(operation, its OpProfile, ranks, hosts) from nccl-tests output."""
    op = next((o for name, o in NCCL_TESTS.items() if name in text), None)
    ranks_hosts = re.findall(r"^#\s+Rank\s+\d+\s.*?\bon\s+(\S+)", text, flags=re.M)
    ranks = len(ranks_hosts)
    iters_m = re.search(r"(?<!warmup )(?<!agg )\biters:\s*(\d+)", text)
    iters = int(iters_m.group(1)) if iters_m else 1
    header = next((ln for ln in text.splitlines() if re.match(r"^#\s+size\s+count\s+type", ln)), None)
    if header is None or ranks < 1:
        raise ProfileError(f"{where}: not nccl-tests output (no '#  Rank' lines or no 'size count type' header)")
    cols = header.lstrip("#").split()
    if op is None:
        op = "allreduce" if "redop" in cols else None
    if op is None:
        raise ProfileError(f"{where}: cannot tell which nccl-tests collective this is (all_reduce_perf, "
                           f"all_gather_perf, alltoall_perf)")
    t_col = cols.index("time")
    sizes, times = [], []
    for ln in text.splitlines():
        parts = ln.split()
        if not parts or ln.lstrip().startswith("#") or not parts[0].isdigit() or len(parts) <= t_col:
            continue
        size = int(parts[0])
        try:
            t_us = float(parts[t_col])
        except ValueError:
            continue
        if size < 1 or not t_us > 0:
            continue
        block = size // ranks if op in ("allgather", "alltoall") else size
        if block >= 1:
            sizes.append(block)
            times.append(t_us * 1e-6)
    if not sizes:
        raise ProfileError(f"{where}: nccl-tests output without data lines")
    return op, _op_profile(op, sizes, times, ranks, iters), ranks, tuple(ranks_hosts)


def parse_osu(text: str, where: str = "OSU output") -> tuple[str, OpProfile, int]:
    """(operation, its OpProfile, ranks = 2) from OSU micro-benchmark output."""
    first = next((ln for ln in text.splitlines() if ln.startswith("# OSU")), None)
    if first is None:
        raise ProfileError(f"{where}: not OSU output (no '# OSU ...' header line)")
    low = first.lower()
    kind = next((o for key, o in OSU_TESTS if key in low), None)
    if kind is None:
        raise ProfileError(f"{where}: OSU test {first[2:].strip()!r} is not one perfmodel reads (allreduce, "
                           f"non-blocking allreduce, allgather, all-to-all, latency, bandwidth)")
    sizes, times = [], []
    for ln in text.splitlines():
        parts = ln.split()
        if len(parts) < 2 or ln.startswith("#") or not parts[0].isdigit():
            continue
        try:
            size, value = int(parts[0]), float(parts[1])
        except ValueError:
            continue
        if size < 1 or not value > 0:
            continue
        sizes.append(size)
        times.append(size / (value * 1e6) if kind == "bandwidth" else value * 1e-6)
    if not sizes:
        raise ProfileError(f"{where}: OSU output without data lines")
    op = "pingpong" if kind == "bandwidth" else kind
    return op, _op_profile(op, sizes, times, 2, 1), 2


def _machine(where: str) -> Machine:
    return Machine(hostname=where, platform="", python="", cpu_model="", cpu_cores=1, cpu_affinity=1)


def load_links(paths: list[str | os.PathLike]) -> Profile:
    """One Profile holding the communication of every file in ``paths`` (a `perfmodel profile --link`
    profile, or nccl-tests / OSU text, detected): the link between nodes that `perfmodel predict
    --link-from` reads. Refuses (ProfileError, one line) a missing file, a format it does not know, a
    file without data lines, and two files that give the same operation at the same rank count."""
    profiles: list[Profile] = []
    found: dict[int, dict] = {}
    for path in paths:
        p = Path(path)
        try:
            text = p.read_text(errors="replace")
        except OSError as e:
            raise ProfileError(f"--link-from {path}: {e.strerror or e}") from None
        if text.lstrip().startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                raise ProfileError(f"--link-from {path}: not valid JSON, nor nccl-tests or OSU output") from None
            prof = profile_from_dict(data, str(p))
            if not any(c.ops for c in prof.comm):
                raise ProfileError(f"--link-from {path}: the profile measured no communication between ranks")
            profiles.append(prof)
            continue
        if "# OSU" in text:
            op, prof_op, ranks = parse_osu(text, f"--link-from {path}")
            hosts = ("node0", "node1")
            library = f"OSU micro-benchmarks ({p.name})"
        elif re.search(r"^#\s+size\s+count\s+type", text, flags=re.M):
            op, prof_op, ranks, hosts = parse_nccl_tests(text, f"--link-from {path}")
            library = f"NCCL, nccl-tests ({p.name})"
        else:
            raise ProfileError(f"--link-from {path}: neither a perfmodel profile nor nccl-tests or OSU output")
        slot = found.setdefault(ranks, {"ops": {}, "hosts": hosts, "library": library})
        if op in slot["ops"]:
            raise ProfileError(f"--link-from {path}: a second file with {op} at {ranks} ranks")
        slot["ops"][op] = prof_op
        slot["library"] = slot["library"] if slot["library"] == library else f"{slot['library']}; {library}"
    comm = [c for prof in profiles for c in prof.comm if c.ops]
    for ranks, slot in sorted(found.items()):
        comm.append(CommProfile(ranks=ranks, backend="mpi", library=slot["library"], hosts=tuple(slot["hosts"]),
                                wall_s=0.0, ops=slot["ops"]))
    if len({c.ranks for c in comm if c.backend == "mpi"}) < len([c for c in comm if c.backend == "mpi"]):
        raise ProfileError("--link-from: two files measured the same rank count; give one per rank count")
    base = profiles[0] if profiles else None
    return Profile(schema_version=SCHEMA_VERSION, created=base.created if base else "",
                   command=base.command if base else "", machine=base.machine if base else _machine(
                       ",".join(str(Path(x).name) for x in paths)), comm=tuple(comm))
