"""Which collective algorithms Open MPI runs, and the flags that make it run the ones the model charges.

Open MPI 5 picks an algorithm per call in its ``tuned`` collective component from fixed decision rules
of communicator size and message size (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, tuned on
UTK clusters), unless ``coll_tuned_use_dynamic_rules`` is 1 and ``coll_tuned_<op>_algorithm`` names
one; on several hosts its ``han`` component (hierarchical: intra-node, then inter-node) comes first.
What these choices cost on shaped 1 Gbit/s links between two emulated nodes (perfmodel.lab.emulate),
measured here on 2026-11-23, one rank per node (float32; wire time of n bytes: n / 121 MB/s):

    Allreduce 40 MB:  ring 0.67 s, basic linear 0.67 s, rabenseifner 0.69 s, recursive doubling 0.40 s
    Allreduce 20 MB:  ring 0.17 s (= 2(p-1)/p n / B), default choice 0.17-0.32 s; allgather ring 0.17 s
    2 nodes x 2 ranks, 40 MB: han 4.8-5.2 s, tuned (han excluded) 0.57-0.59 s

so the default choice both moves with the size and differs from every closed form by up to 2x. The
validation therefore fixes the algorithm: ``FORCED`` is what the emulated cluster asks Open MPI to run
(``mca_args``), ``MODEL_ALLREDUCE`` the name of the same algorithm in perfmodel.collectives; the
profile measures each operation under the same flags, so its alpha-beta fits describe that algorithm.
han and the single-node ``sm`` collectives are left out, so that ``tuned`` serves every communicator.
What ``tuned`` picks when nothing is forced is modelled in perfmodel.ompi_tuned (``--allreduce ompi``),
and checked on emulated nodes by ``python -m reproduce.validation --only ompi-choice``.
"""

from __future__ import annotations

from .specs import SpecError

#: Open MPI 5.0 tuned algorithm ids, from `ompi_info --param coll tuned --level 9` (Valid values).
TUNED_IDS: dict[str, dict[str, int]] = {
    "allreduce": {"basic-linear": 1, "nonoverlapping": 2, "recursive-doubling": 3, "ring": 4,
                  "segmented-ring": 5, "rabenseifner": 6},
    "allgather": {"linear": 1, "bruck": 2, "recursive-doubling": 3, "ring": 4, "neighbor": 5,
                  "two-proc": 6, "sparbit": 7},
}

#: Open MPI 5.0 libnbc (non-blocking collectives) algorithm ids, from `ompi_info --param coll libnbc
#: --level 9`. libnbc's own choice for MPI_Iallreduce below 4 ranks is binomial (reduce, then
#: broadcast: twice the ring's bytes), which DASO's 2-node global sync would otherwise get.
LIBNBC_IDS: dict[str, dict[str, int]] = {
    "iallreduce": {"ring": 1, "binomial": 2, "rabenseifner": 3, "recursive-doubling": 4},
}

#: What the emulated-cluster runs ask for: the bandwidth-optimal ring for every operation.
FORCED: dict[str, str] = {"allreduce": "ring", "allgather": "ring", "iallreduce": "ring"}

#: perfmodel.collectives' name of FORCED["allreduce"] (cluster_allreduce's algorithm argument).
MODEL_ALLREDUCE = "ring"

#: Collective components used: tuned (blocking), libnbc (non-blocking), basic and self (fallbacks). Left
#: out: han (hierarchical) and sm (single-node shared-memory collectives). An inclusive list, so the
#: arguments hold no shell-special characters.
COMPONENTS = ("tuned", "libnbc", "basic", "self")


def mca_args(choice: dict[str, str] = FORCED) -> list[str]:
    """mpiexec arguments that make Open MPI's tuned (blocking) and libnbc (non-blocking) components run
    ``choice`` ({operation: algorithm})."""
    out = ["--mca", "coll", ",".join(COMPONENTS), "--mca", "coll_tuned_use_dynamic_rules", "1"]
    tables = {"tuned": TUNED_IDS, "libnbc": LIBNBC_IDS}
    for op, algo in choice.items():
        component = "libnbc" if op in LIBNBC_IDS else "tuned"
        ids = tables[component].get(op)
        if ids is None or algo not in ids:
            known = ", ".join(f"{o}: {'/'.join(a)}" for t in tables.values() for o, a in t.items())
            raise SpecError(f"no Open MPI algorithm {algo!r} for {op!r} (known: {known})")
        out += ["--mca", f"coll_{component}_{op}_algorithm", str(ids[algo])]
    return out
