"""Open MPI's allreduce: the algorithm its ``tuned`` component runs for each communicator size and size.

Without ``coll_tuned_use_dynamic_rules`` (its default is false), Open MPI 5.0's ``tuned`` component
picks a blocking MPI_Allreduce's algorithm per call from fixed rules of the communicator size p and
total_dsize = datatype size x count (n bytes): ompi_coll_tuned_allreduce_intra_dec_fixed in
ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, repository open-mpi/ompi, branch v5.0.x at commit
b962e8a65c07487143662ad162d7d74d3eab4915 (2026-08-17). The function last changed in f670364d76
(2020-11-13) and is the same in the tags v5.0.0 and v5.0.10, so in the v5.0.11 installed here. Its
rules for commutative operations (MPI_SUM, the gradient sum), every bound exclusive ("<"):

    p < 4      n < 8: ring; < 4096: recursive-doubling; < 8192: ring; < 16384: recursive-doubling;
               < 65536: ring; < 262144: segmented-ring; else rabenseifner
    p < 8      n < 16: ring; < 8192: recursive-doubling; else rabenseifner
    p < 16     n < 8192: recursive-doubling; else rabenseifner
    p < 32     n < 64: segmented-ring; < 4096: recursive-doubling; else rabenseifner
    p < 64     n < 128: segmented-ring; else rabenseifner
    p < 128    n < 262144: recursive-doubling; else rabenseifner
    p < 256    n < 131072: nonoverlapping; < 262144: recursive-doubling; else rabenseifner
    p < 512    n < 4096: nonoverlapping; else rabenseifner
    p < 2048   n < 2048: nonoverlapping; < 16384: recursive-doubling; else rabenseifner
    p < 4096   n < 2048: nonoverlapping; < 4096: segmented-ring; < 16384: recursive-doubling; else rabenseifner
    p >= 4096  n < 2048: nonoverlapping; < 16384: segmented-ring; < 32768: recursive-doubling; else rabenseifner

(The non-commutative rules, which never pick ring, segmented ring or Rabenseifner, are not modelled.)
The rules pass segment size 0, and the algorithms in ompi/mca/coll/base/coll_base_allreduce.c (same
branch and commit) fall back on counts of elements, so what runs (``allreduce_runs``) is:

    segmented-ring  segment size 0 leaves one segment of the whole count, and a count below p x segment
                    count runs the plain ring: the segmented ring is always the ring here;
    ring            count < p runs recursive doubling;
    rabenseifner    count < 2^floor(log2 p) runs basic linear;
    nonoverlapping  tuned's own reduce to rank 0, then tuned's own broadcast from rank 0.

``MODEL_NAME`` names the perfmodel.collectives form that costs each (docs/model.md section 3.2):
ring and segmented ring -> ring; recursive doubling and Rabenseifner -> their own; basic linear -> its
own (rank 0 receives and sums every rank's n bytes, then sends n to every rank); nonoverlapping -> tree
(binomial reduce, then binomial broadcast). What differs: tuned's reduce is binomial wherever
nonoverlapping is picked (p >= 128) except in-order binary at p >= 2048 for n in 512..1023 (p < 4096),
16..31 and 1024..2047 (p >= 4096); tuned's broadcast is not binomial: at p in 128..255 a binary tree
(n in 2..16383 and 32768..65535: two sends per level, about twice the binomial's critical path), linear
(n in 16384..32767: p-1 sends from the root, 127-254 against the binomial's 7-8) or 4-nomial (n >=
65536: up to 3 sends per level over ceil(log4 p) levels, about 1.5x); at p >= 256 4-nomial (radix
coll_tuned_bcast_algorithm_knomial_radix = 4). All are messages under 128 KiB, where latency dominates.

This is what Open MPI runs when ``tuned`` serves the communicator: han (hierarchical) and the
single-node ``sm`` collectives have higher priority where they are enabled (perfmodel.mpi_algorithms
leaves them out). Element counts for the fallbacks assume ``itemsize`` bytes per element (4: float32).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .specs import SpecError

#: Open MPI 5.0.x tuned allreduce rules for commutative operations (module docstring): rows of
#: (communicator size bound, ((total_dsize bound, algorithm), ...)); a row serves p < its bound, a
#: pair n < its bound, the first that holds.
RULES: tuple[tuple[float, tuple[tuple[float, str], ...]], ...] = (
    (4, ((8, "ring"), (4096, "recursive-doubling"), (8192, "ring"), (16384, "recursive-doubling"),
         (65536, "ring"), (262144, "segmented-ring"), (math.inf, "rabenseifner"))),
    (8, ((16, "ring"), (8192, "recursive-doubling"), (math.inf, "rabenseifner"))),
    (16, ((8192, "recursive-doubling"), (math.inf, "rabenseifner"))),
    (32, ((64, "segmented-ring"), (4096, "recursive-doubling"), (math.inf, "rabenseifner"))),
    (64, ((128, "segmented-ring"), (math.inf, "rabenseifner"))),
    (128, ((262144, "recursive-doubling"), (math.inf, "rabenseifner"))),
    (256, ((131072, "nonoverlapping"), (262144, "recursive-doubling"), (math.inf, "rabenseifner"))),
    (512, ((4096, "nonoverlapping"), (math.inf, "rabenseifner"))),
    (2048, ((2048, "nonoverlapping"), (16384, "recursive-doubling"), (math.inf, "rabenseifner"))),
    (4096, ((2048, "nonoverlapping"), (4096, "segmented-ring"), (16384, "recursive-doubling"),
            (math.inf, "rabenseifner"))),
    (math.inf, ((2048, "nonoverlapping"), (16384, "segmented-ring"), (32768, "recursive-doubling"),
                (math.inf, "rabenseifner"))),
)

#: perfmodel.collectives' cluster_allreduce algorithm that costs each Open MPI algorithm.
MODEL_NAME: dict[str, str] = {
    "basic-linear": "basic-linear",
    "nonoverlapping": "tree",
    "recursive-doubling": "recursive-doubling",
    "ring": "ring",
    "segmented-ring": "ring",
    "rabenseifner": "rabenseifner",
}

_NAME_DTYPE = "<U18"
_P_BOUNDS = np.array([bound for bound, _ in RULES], dtype=float)


def _sizes(comm_size, nbytes) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(comm_size, dtype=float)
    n = np.asarray(nbytes, dtype=float)
    if np.any(~np.isfinite(p)) or np.any(p < 1) or np.any(p != np.floor(p)):
        raise SpecError(f"communicator sizes must be integers >= 1, got {comm_size!r}")
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise SpecError(f"message sizes must be finite bytes >= 0, got {nbytes!r}")
    return np.broadcast_arrays(p, n)


def _out(names: np.ndarray):
    return str(names) if names.ndim == 0 else names


def allreduce_choice(comm_size, nbytes):
    """The algorithm Open MPI 5.0's tuned rules pick (a TUNED_IDS["allreduce"] name) for a commutative
    allreduce of nbytes bytes on comm_size ranks: a str for scalars, an array of str for arrays
    (broadcast together)."""
    p, n = _sizes(comm_size, nbytes)
    row = np.searchsorted(_P_BOUNDS, p, side="right")
    out = np.empty(p.shape, dtype=_NAME_DTYPE)
    for i, (_, cuts) in enumerate(RULES):
        sel = row == i
        if np.any(sel):
            bounds = np.array([b for b, _ in cuts], dtype=float)
            names = np.array([a for _, a in cuts], dtype=_NAME_DTYPE)
            out[sel] = names[np.searchsorted(bounds, n[sel], side="right")]
    return _out(out)


def allreduce_runs(comm_size, nbytes, itemsize: int = 4):
    """The algorithm that then runs, after the base algorithms' fallbacks on the element count
    floor(nbytes / itemsize) (module docstring): segmented ring -> ring, ring with count < p ->
    recursive doubling, Rabenseifner with count < 2^floor(log2 p) -> basic linear."""
    if isinstance(itemsize, bool) or int(itemsize) != itemsize or itemsize < 1:
        raise SpecError(f"itemsize must be a positive integer (bytes), got {itemsize!r}")
    p, n = _sizes(comm_size, nbytes)
    names = np.array(allreduce_choice(p, n), dtype=_NAME_DTYPE)
    count = np.floor(n / itemsize)
    pof2 = 2.0 ** np.floor(np.log2(p))
    multi = p > 1
    names = np.where(names == "segmented-ring", "ring", names)
    names = np.where((names == "ring") & multi & (count < p), "recursive-doubling", names)
    names = np.where((names == "rabenseifner") & multi & (count < pof2), "basic-linear", names)
    return _out(names.astype(_NAME_DTYPE))


def model_algorithm(comm_size, nbytes, itemsize: int = 4):
    """perfmodel.collectives' name of the algorithm Open MPI runs (MODEL_NAME of ``allreduce_runs``)."""
    names = np.asarray(allreduce_runs(comm_size, nbytes, itemsize))
    out = np.empty(names.shape, dtype=_NAME_DTYPE)
    for ompi, model in MODEL_NAME.items():
        out[names == ompi] = model
    return _out(out)


def per_model_algorithm(fn: Callable[[str, np.ndarray, np.ndarray], np.ndarray], n, gpus,
                        itemsize: int = 4) -> np.ndarray:
    """fn(model_name, n_sel, w_sel) evaluated on each group of (n bytes, W ranks) pairs that Open MPI
    runs with the same algorithm (``model_algorithm``), assembled in the broadcast shape of n and gpus:
    the cost (perfmodel.collectives) or the bytes (perfmodel.scaling) of ``--allreduce ompi``."""
    nb, wb = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(gpus, dtype=float))
    names = np.asarray(model_algorithm(wb, nb, itemsize))
    out = np.zeros(nb.shape)
    for name in np.unique(names):
        sel = names == name
        out[sel] = fn(str(name), nb[sel], wb[sel])
    return out
