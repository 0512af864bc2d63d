"""A profile as the model's specs: ``profile_workload`` (a Workload whose compute time is the fitted
t_c(b)), ``profile_links`` and ``profile_op_links`` (alpha-beta Links), ``profile_cluster`` (a "local"
Cluster, or a preset with the profiled links put in), and DASO's non-blocking sync (``nonblocking_factor``,
``profile_daso``). Units: seconds, bytes, bytes per second.
"""

from __future__ import annotations

import dataclasses
import statistics
import typing

from ...specs import Cluster, ComputeTime, Link, SpecError, Workload
from .fit import AlphaBetaFit
from .schema import BLOCK_OPS, OpProfile, Profile, ProfileError, op_blocks


def _describe(profile: Profile) -> str:
    return f"profile of {profile.machine.hostname} ({profile.created})"


def optimizer_step_s(profile: Profile) -> float:
    """The profile's optimizer-step time (median over its batch sizes; seconds), 0 when not measured."""
    rows = profile.compute.rows if profile.compute is not None else ()
    return float(statistics.median([r.step.median_s for r in rows])) if rows else 0.0


def profile_workload(profile: Profile, name: str | None = None, *, kind: str = "linear") -> Workload:
    """A Workload from the profiled model and its compute times.

    kind "linear": ComputeTime t(b) = t0 + t1 b with t0 = fitted intercept + t_cg and t1 the fitted
    slope (falls back to the table if the fitted slope is 0); kind "table": the measured medians
    (+ t_cg). copy_s = t_cg: the spec's t includes the device->host copy, which the TernGrad model
    subtracts and charges again as communication. update_s: the optimizer step (optimizer_step_s),
    paid once per step under gradient accumulation. Compute is keyed by ``device_key`` of the GPU, or "cpu".
    """
    if kind not in ("linear", "table"):
        raise ProfileError(f"kind must be 'linear' or 'table', got {kind!r}")
    if profile.model is None or profile.compute is None:
        raise ProfileError("profile has no compute measurements; rerun `perfmodel profile` with "
                           "--workload or --model")
    m, c = profile.model, profile.compute
    t_cg = c.t_cg
    update = optimizer_step_s(profile)
    where = (f"{_describe(profile)}: {c.device_name}, {c.threads} thread(s), batches "
             f"{','.join(str(r.batch) for r in c.rows)}")
    if kind == "linear" and c.fit.slope > 0:
        ct = ComputeTime("linear", t0_s=c.fit.intercept + t_cg, t1_s=c.fit.slope, copy_s=t_cg, update_s=update,
                         source=f"{where}; linear fit, max error {c.fit.max_rel_err:.1%}")
    else:
        ct = ComputeTime.table({r.batch: r.total.median_s + t_cg for r in c.rows}, copy_s=t_cg, update_s=update,
                               source=f"{where}; measured medians")
    try:
        return Workload(name=name or m.name, tensor_sizes=tuple(m.tensor_sizes), compute={c.key: ct},
                        tensor_names=tuple(m.tensor_names), classifier_tensors=m.classifier_tensors,
                        bytes_per_element=m.bytes_per_element, source=_describe(profile))
    except SpecError as exc:
        raise ProfileError(f"profile cannot make a workload: {exc}") from None


def _link_from(op: "OpProfile | AlphaBetaFit", nbytes: float | None, *, ring_ranks: int | None, source: str,
               blocks: int | None = None) -> Link:
    """A Link from an op's measurements (an ``OpProfile``) or a bare fit, ring-inverted when
    ``ring_ranks`` is given (t = 2(p-1) alpha + 2(p-1)/p n beta), inverted through the blocks of a
    ``BLOCK_OPS`` call when ``blocks`` is (t = blocks (alpha + n beta), n one block: ``op_blocks``).

    With ``nbytes``: latency = the small-message intercept (for a ring, of the messages of at least one
    float32 element per rank: ``OpProfile.latency_from``), bandwidth = what a message of nbytes gets:
    from an OpProfile its measured time there (``OpProfile.time_at``), from a bare fit the piecewise
    fit's (``AlphaBetaFit.effective``), so the Link reproduces that time at nbytes exactly. Without:
    the single line fitted over all sizes.
    """
    fit = op.fit if isinstance(op, OpProfile) else op
    if nbytes is None:
        alpha, beta, span = fit.alpha_s, fit.beta_s_per_byte, "one line over all sizes"
    elif isinstance(op, OpProfile):
        # a ring needs one float32 element per rank: below 4 p bytes Open MPI runs another algorithm
        alpha = op.latency_from(4.0 * ring_ranks) if ring_ranks is not None else fit.latency_s
        beta = max(op.time_at(nbytes) - alpha, 0.0) / nbytes
        span = f"latency of the smallest messages, bandwidth measured at {nbytes:.0f} B"
    else:
        alpha, beta = fit.effective(nbytes)
        span = f"latency of the smallest messages, bandwidth at {nbytes:.0f} B"
    if ring_ranks is not None:
        p = ring_ranks
        alpha, beta = alpha / (2 * (p - 1)), beta * p / (2 * (p - 1))
    if blocks is not None:
        alpha, beta = alpha / blocks, beta / blocks
    bw = 1.0 / beta if beta > 0 else float("inf")
    return Link(latency_s=alpha, bandwidth_Bps=bw, source=f"{source}, {span}")


NETWORK_SOURCES = ("allreduce", "iallreduce", "pingpong")


def profile_links(profile: Profile, *, network_from: str = "allreduce",
                  nbytes: float | None = None, ranks: int | None = None) -> dict[str, Link]:
    """Links measured by the profile: "network" always (needs a comm run with >= 2 ranks), "intra"
    when an NCCL run exists, "host" when a GPU host-copy fit exists.

    network_from "allreduce" (default): the MPI Allreduce fit at the largest rank count p, inverted
    through the ring formula t = 2(p-1) alpha + 2(p-1)/p n beta. Why: predictions for ssgd, terngrad
    and daso are Allreduce-dominated; this choice makes the ring model reproduce the measured Allreduce
    at p, and it charges the reduction arithmetic (memory-bound on a CPU) that a ping-pong never does.
    "iallreduce": the same from MPI_Iallreduce waited at once (what SSGD's overlapped buckets run).
    "pingpong": the one-way ping-pong fit itself (the textbook point-to-point link; better for the
    parameter-server strategy). Latency is the small-message intercept and the bandwidth the one the
    piecewise fit gives a message of ``nbytes`` (default: the profiled model's gradient bytes; with
    no model, the single line fitted over all sizes), so the ring model reproduces the measured
    Allreduce time at that size. ranks: use the MPI run at this rank count when the profile has one
    (else the largest measured).
    """
    if network_from not in NETWORK_SOURCES:
        raise ProfileError(f"network_from must be one of {', '.join(NETWORK_SOURCES)}, got {network_from!r}")
    if nbytes is None and profile.model is not None:
        nbytes = profile.model.gradient_bytes
    links: dict[str, Link] = {}
    mpi = (ranks is not None and profile.comm_for("mpi", ranks=ranks)) or profile.comm_for("mpi")
    if mpi is not None:
        op = mpi.ops.get(network_from)
        if op is None:
            raise ProfileError(f"profile has no MPI {network_from} measurements at {mpi.ranks} ranks")
        ring = mpi.ranks if network_from != "pingpong" else None
        how = f"ring-inverted {network_from}" if ring else "one-way pingpong"
        links["network"] = _link_from(op, nbytes, ring_ranks=ring,
                                      source=f"{_describe(profile)}: MPI {how} at {mpi.ranks} ranks")
    nccl = profile.comm_for("nccl")
    if nccl is not None and "allreduce" in nccl.ops:
        links["intra"] = _link_from(nccl.ops["allreduce"], nbytes, ring_ranks=nccl.ranks,
                                    source=f"{_describe(profile)}: NCCL ring-inverted allreduce at {nccl.ranks} GPUs")
    if profile.compute is not None and profile.compute.host_link is not None:
        links["host"] = _link_from(profile.compute.host_link, nbytes, ring_ranks=None,
                                   source=f"{_describe(profile)}: device->host copy")
    return links


def profile_op_links(profile: Profile, op_bytes: typing.Mapping[str, float], *,
                     ranks: int | None = None) -> dict[str, Link]:
    """Each measured block operation's own network link ({op: Link} for the ops of ``op_bytes`` that the
    MPI run at ``ranks`` ranks, else the largest, measured; ``BLOCK_OPS``): the op's piecewise fit read at
    its block of op_bytes[op] bytes, inverted through t = blocks (alpha + n beta) (``op_blocks``), so
    that perfmodel.collectives' ring Allgather / pairwise Alltoall on one rank per node, and the
    parameter server's time per exchange, reproduce the measured time at that block. And
    "global_iallreduce" (DASO's global group, one rank per node): read at its message of
    op_bytes["global_iallreduce"] bytes and ring-inverted over the run's nodes (CommProfile.nodes). For
    Cluster.network_ops."""
    mpi = (ranks is not None and profile.comm_for("mpi", ranks=ranks)) or profile.comm_for("mpi")
    links: dict[str, Link] = {}
    if mpi is None:
        return links
    for op, nbytes in op_bytes.items():
        if op not in BLOCK_OPS and op != "global_iallreduce":
            raise ProfileError(f"no per-operation link for {op!r}; they exist for "
                               f"{', '.join(BLOCK_OPS + ('global_iallreduce',))}")
        measured = mpi.ops.get(op)
        if measured is None:
            continue
        if op == "global_iallreduce":  # a ring over the nodes, one rank each
            links[op] = _link_from(measured, float(nbytes), ring_ranks=mpi.nodes,
                                   source=f"{_describe(profile)}: MPI Iallreduce on one rank of each of "
                                          f"{mpi.nodes} nodes, ring-inverted")
            continue
        links[op] = _link_from(measured, float(nbytes), ring_ranks=None, blocks=op_blocks(op, mpi.ranks),
                               source=f"{_describe(profile)}: MPI {op} at {mpi.ranks} ranks, one block")
    return links


def nonblocking_factor(profile: Profile, nbytes: float | None = None, ranks: int | None = None) -> float | None:
    """Measured time (``OpProfile.time_at``) of a non-blocking MPI allreduce waited at once over a
    blocking one of ``nbytes`` (default: the profiled model's gradient bytes), at the same rank count;
    None when the profile did not measure ``iallreduce``. DASO's cycling-phase sync is such a
    non-blocking allreduce."""
    mpi = (ranks is not None and profile.comm_for("mpi", ranks=ranks)) or profile.comm_for("mpi")
    if mpi is None or "iallreduce" not in mpi.ops or "allreduce" not in mpi.ops:
        return None
    if nbytes is None:
        if profile.model is None:
            return None
        nbytes = profile.model.gradient_bytes
    return mpi.ops["iallreduce"].time_at(float(nbytes)) / mpi.ops["allreduce"].time_at(float(nbytes))


def profile_daso(profile: Profile) -> dict:
    """DASO's non-blocking sync on the profiled machine, as Strategy fields: daso_progress "wait" for
    CPU ranks (MPI moves a non-blocking collective only inside MPI calls), "async" on GPUs; and
    daso_nonblocking_factor, the measured iallreduce / allreduce ratio, when the profile has it."""
    on_cpu = profile.compute is None or profile.compute.device == "cpu"
    out: dict = {"progress": "wait" if on_cpu else "async"}
    factor = nonblocking_factor(profile)
    if factor is not None:
        out["nonblocking_factor"] = factor
    return out


def profile_cluster(profile: Profile, base: Cluster | None = None, *,
                    links: str | typing.Iterable[str] | None = None, network_from: str = "allreduce",
                    ranks: int | None = None, nbytes: float | None = None,
                    op_bytes: typing.Mapping[str, float] | None = None) -> Cluster:
    """A Cluster from the profile.

    base None: a "local" cluster of this machine (``links`` is ignored). On CPU each rank counts as
    one node with one "GPU" (gpus_per_node 1) on the measured MPI link, host copies are free, gpu
    "cpu". On a GPU machine gpus_per_node is the GPU count, intra the NCCL link (the MPI link if NCCL
    was not measured), host the measured copy link. With ``base``: the preset with the measured links
    replaced, or only those named in ``links`` (a list, or a comma string like "network,host";
    "none" or "" replaces nothing). network_from, ranks, nbytes: which measurement gives the links
    (``profile_links``). op_bytes ({"allgather": block bytes, ...}): the local cluster also carries
    those operations' own links where the profile measured them (``profile_op_links``,
    Cluster.network_ops).
    """
    measured = profile_links(profile, network_from=network_from, ranks=ranks, nbytes=nbytes)
    if base is not None:
        if links is None:
            wanted = list(measured)
        else:
            items = links.split(",") if isinstance(links, str) else list(links)
            wanted = [w.strip() for w in items if w.strip() and w.strip() != "none"]
        for w in wanted:
            if w not in ("intra", "host", "network"):
                raise ProfileError(f"link must be one of intra, host, network (or none), got {w!r}")
            if w not in measured:
                raise ProfileError(f"profile did not measure the {w} link "
                                   f"(measured: {', '.join(sorted(measured)) or 'none'})")
        out = base
        for w in wanted:
            out = out.with_link(w, measured[w])
        if not wanted:
            return out
        return dataclasses.replace(out, source=f"{base.source}; {', '.join(wanted)} from {_describe(profile)}".lstrip("; "))
    if "network" not in measured:
        raise ProfileError("profile has no communication measured with 2 or more ranks; "
                           "rerun `perfmodel profile` with --ranks 1,2")
    net = measured["network"]
    compute = profile.compute
    on_gpu = compute is not None and compute.device == "cuda"
    gpus = max(profile.machine.gpu_count, 1) if on_gpu else 1
    free = Link(latency_s=0.0, bandwidth_Bps=float("inf"), source="CPU training: no device->host copy")
    return Cluster(name="local", gpus_per_node=gpus, intra=measured.get("intra", net),
                   host=measured.get("host", free), network=net,
                   gpu=compute.key if compute is not None else "cpu",
                   source=_describe(profile),
                   network_ops=tuple(profile_op_links(profile, op_bytes or {}, ranks=ranks).items()))
