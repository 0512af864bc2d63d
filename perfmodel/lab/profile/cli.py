"""``perfmodel profile``: measure this machine's compute and communication, write one profile JSON.

    perfmodel profile --workload lenet --batch 16,32,64,128 --ranks 1,2 --out profile.json
    perfmodel profile --model mypkg.nets:small --input-shape 1,28,28 --batch 8,16 --ranks 1,2,4

Compute is timed in this process (torch), and on CPUs also on all ranks of each MPI run at once
(their CommProfile's ``compute``: ranks sharing a machine slow each other, and a synchronous step waits
for the slowest); communication by ``python -m perfmodel.lab.profile.comm`` started by the launcher
(``--launcher "srun --mpi=pmix"``, ``$DSGD_LAUNCHER``, else mpiexec; see perfmodel.lab.launcher) for every
rank count above 1 (one rank moves nothing: recorded with no ops).
With GPUs, an NCCL run through torch.distributed is added for rank counts the GPUs can hold.
The file is written atomically; bad arguments or failures raise ProfileError (one line, exit 2).

Standalone: ``python -m perfmodel.lab.profile.cli profile ...`` and ``python -m perfmodel.lab.profile.cli show
profile.json`` (print a profile's tables).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from perfmodel.lab.launcher import Launcher, flavor_of, launcher_version, resolve_launcher, stop_group
from perfmodel.specs import SpecError

from ..emulate import ENV_MPIEXEC_ARGS
from .comm import int_list
from .gpu_layout import layout_lines, read_nvidia_smi_topology
from .profile_file import comm_profile_from_dict, load_profile, save_profile
from .schema import COMM_OPS, FIT_STATS, CommProfile, Machine, Profile, ProfileError, SCHEMA_VERSION

__all__ = ["add_profile_parser", "run_profile_command", "format_summary", "main", "mpiexec_command"]

_REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_OPS = ",".join(COMM_OPS)
#: What `perfmodel profile --link` times by default: the operations whose links the model reads between nodes.
LINK_OPS = "pingpong,allreduce,iallreduce,allgather,alltoall,ps"


# ---------------------------------------------------------------- argument parsing


def add_profile_parser(subparsers: Any) -> None:
    """Add the ``profile`` subcommand (func=run_profile_command) to an argparse subparsers object."""
    p = subparsers.add_parser(
        "profile", help="measure compute t_c(b) and MPI alpha-beta on this machine, write a profile JSON",
        description="Time a model's training step over batch sizes and MPI ping-pong/Allreduce/Iallreduce/Bcast/"
                    "Reduce/Allgather/Alltoall over message sizes; write one versioned JSON profile.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--workload", metavar="NAME", help="a network of trainers.models (e.g. lenet)")
    src.add_argument("--model", metavar="MODULE:CALLABLE", help="a callable returning a torch.nn.Module")
    p.add_argument("--input-shape", metavar="C,H,W", help="input shape for --model (e.g. 1,28,28)")
    p.add_argument("--batch", default="16,32,64,128", help="batch sizes to time (default 16,32,64,128)")
    p.add_argument("--ranks", default="1,2", help="MPI rank counts to measure (default 1,2)")
    p.add_argument("--out", default="profile.json", help="profile file to write (default profile.json)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="compute device")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads while timing compute (default 1, as one trainer rank per core)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per batch size (default 3)")
    p.add_argument("--repeats", type=int, default=10, help="timed steps per batch size (default 10)")
    p.add_argument("--min-bytes", default="8", help="smallest message (default 8)")
    p.add_argument("--max-bytes", default="64Mi", help="largest message (default 64Mi)")
    p.add_argument("--ops", default=DEFAULT_OPS, help=f"communication operations (default {DEFAULT_OPS})")
    p.add_argument("--extra-sizes", action="append", default=[], metavar="OP=SIZE[,SIZE...]",
                   help="also time OP at these message sizes, e.g. the bytes your job's exchange sends "
                        "(iallreduce=233100,1724320): links are read at a job's message size, interpolated "
                        "between measured sizes; repeatable")
    p.add_argument("--compute-after", default="grad", metavar="SIZE[,SIZE...]|grad|none",
                   help="also time each MPI run's concurrent training step right after an Allreduce of these "
                        "sizes, as a data-parallel step computes between two exchanges (CPU caches emptied, "
                        "cores woken); "
                        "grad: the model's fp32 gradient (default); none: not")
    p.add_argument("--comm-repeats", type=int, default=15, help="timed runs per message size (default 15)")
    p.add_argument("--comm-timing", choices=("barrier", "back-to-back"), default="barrier",
                   help="barrier: each collective after a barrier, timed alone, as a training step starts its "
                        "collectives after compute (default, as OSU's benchmarks); back-to-back: nccl-tests' loop")
    p.add_argument("--fit-stat", default="median", choices=FIT_STATS,
                   help="statistic of the timed runs the alpha-beta fits use (default median; min or p25 "
                        "estimate the undisturbed time on a machine shared with other jobs)")
    p.add_argument("--nccl", default="auto", choices=("auto", "on", "off"),
                   help="also time NCCL through torch.distributed (auto: when GPUs can hold the ranks)")
    p.add_argument("--launcher", default=None,
                   help="command that starts the ranks, e.g. 'srun --mpi=pmix' (default $DSGD_LAUNCHER, then mpiexec)")
    p.add_argument("--hostfile", default=None, help="hostfile handed to the launcher")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (older spelling of --launcher PATH)")
    p.add_argument("--mpiexec-args", default=os.environ.get(ENV_MPIEXEC_ARGS, ""),
                   help="extra launcher arguments, e.g. '--mca btl tcp,self' (default: $PERFMODEL_MPIEXEC_ARGS, "
                        "which `perfmodel emulate` sets to place the ranks on its emulated nodes)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per mpiexec run (default 600)")
    p.add_argument("--no-compute", action="store_true", help="skip the compute measurements")
    p.add_argument("--link", action="store_true",
                   help="measure only the network between two nodes: 2 ranks, one on each node (a hostfile of two "
                        "hosts, or `perfmodel emulate --nodes 2`), the operations the model reads "
                        f"({LINK_OPS}), and with --workload the training step on both ranks right after an "
                        "exchange over the link (--compute-after); the file is what `perfmodel predict "
                        "--link-from` takes")
    p.add_argument("--kernel-load", type=float, default=None, metavar="SECONDS",
                   help="with --link (refused without it): measure the kernel's network CPU time per byte "
                        "between the two nodes "
                        "(/proc/stat irq+softirq over this many seconds of exchanges, less as many idle; "
                        "default 2, 0: not measured)")
    p.add_argument("--quiet", action="store_true", help="no progress bars or summary")
    p.set_defaults(func=run_profile_command)


# ---------------------------------------------------------------- machine description


def _mpiexec_version(mpiexec: str | None) -> str:
    return launcher_version(mpiexec) if mpiexec else ""


def _package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def describe_machine(*, mpiexec: str | None, mpi_library: str = "") -> Machine:
    """This machine: host, OS, CPU model and cores, torch (and GPUs, with their layout), MPI versions."""
    from .compute import _cpu_model, torch_environment

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        affinity = os.cpu_count() or 1
    try:
        env = torch_environment()
    except ImportError:
        env = {}
    if env.get("gpu_count", 0) >= 2:  # where the GPUs sit, beside the NCCL timing (gpu_layout)
        env["gpu_topology"] = read_nvidia_smi_topology()
    return Machine(hostname=socket.gethostname(), platform=platform.platform(), python=platform.python_version(),
                   cpu_model=_cpu_model(), cpu_cores=os.cpu_count() or 1, cpu_affinity=affinity,
                   mpi_library=mpi_library, mpi4py_version=_package_version("mpi4py"),
                   mpiexec_version=_mpiexec_version(mpiexec), **env)


# ---------------------------------------------------------------- mpiexec


def mpiexec_command(mpiexec: str, ranks: int, module_args: Sequence[str], *, extra: Sequence[str] = (),
                    version: str = "") -> list[str]:
    """The argv that starts ``python -m perfmodel.lab.profile.comm`` on ``ranks`` ranks with launcher ``mpiexec``
    and its arguments ``extra`` (flavour flags and core binding as perfmodel.lab.launcher makes them)."""
    launcher = Launcher((mpiexec, *extra), flavor_of(mpiexec, version or launcher_version(mpiexec)),
                        is_root=hasattr(os, "geteuid") and os.geteuid() == 0, usable_cpus=_usable_cpus())
    return _comm_command(launcher, ranks, module_args)


def _comm_command(launcher: Launcher, ranks: int, module_args: Sequence[str]) -> list[str]:
    # one core per rank when they fit: with --oversubscribe Open MPI leaves ranks unbound, and two
    # busy-polling ranks the scheduler puts on one core time each other in milliseconds
    return launcher.command(ranks, [sys.executable, "-m", "perfmodel.lab.profile.comm", *module_args], bind=True)


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_comm(mpiexec: str | None, ranks: int, *, backend: str, module_args: Sequence[str], extra: Sequence[str] = (),
             version: str = "", timeout: float, on_progress: Callable[[], None] | None = None,
             launcher: Launcher | None = None) -> CommProfile:
    """Run the comm benchmark on ``ranks`` ranks (started by ``launcher``, else by ``mpiexec`` with its
    arguments ``extra``) and return its CommProfile."""
    with tempfile.TemporaryDirectory(prefix="perfmodel-comm-") as tmp:
        out = os.path.join(tmp, "comm.json")
        args = [*module_args, "--backend", backend, "--out", out, "--progress"]
        if launcher is not None:
            argv = _comm_command(launcher, ranks, args)
        else:
            argv = mpiexec_command(str(mpiexec), ranks, args, extra=extra, version=version)
        mpiexec = argv[0]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        stderr_path = os.path.join(tmp, "stderr.txt")
        tail: list[str] = []
        with open(stderr_path, "w+", encoding="utf-8", errors="replace") as err:
            try:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                        text=True, env=env, start_new_session=True)
            except OSError as exc:
                raise ProfileError(f"cannot start {mpiexec}: {exc}") from None

            def read() -> None:
                assert proc.stdout is not None
                for line in proc.stdout:
                    if line.startswith("PROGRESS "):
                        if on_progress is not None:
                            on_progress()
                    elif line.strip():
                        tail.append(line.strip())
                        del tail[:-5]

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop_group(proc, timeout=5)
                raise ProfileError(f"{backend} benchmark on {ranks} ranks did not finish within {timeout:g} s "
                                   f"(raise --timeout or lower --max-bytes)") from None
            except BaseException:
                stop_group(proc, timeout=5)
                raise
            reader.join(timeout=5)
            err.seek(0)
            errors = [ln.strip() for ln in err.read().splitlines() if ln.strip()]
        if rc != 0 or not os.path.exists(out):
            from ..launcher import error_line

            mine = [ln for ln in errors if "perfmodel.lab.profile.comm: error" in ln]
            last = (mine or [error_line("\n".join(errors + tail), "no output")])[-1]
            raise ProfileError(f"{backend} benchmark on {ranks} ranks failed (exit {rc}): {last}")
        import json

        with open(out, encoding="utf-8") as fh:
            data = json.load(fh)
        launch = shlex.join(argv[: argv.index(sys.executable)])
        return comm_profile_from_dict(data | {"launch": launch}, f"{backend} benchmark output on {ranks} ranks")


# ---------------------------------------------------------------- the command


def _warn_if_busy(multi: Sequence[int], quiet: bool) -> None:
    """Say so when other processes keep the CPUs busy: MPI timings on shared cores are unreliable."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return
    cpus = os.cpu_count() or 1
    if multi and not quiet and load > 0.5 * cpus:
        print(f"perfmodel: warning: load average {load:.1f} on {cpus} CPUs; other processes will slow "
              f"down and scatter the MPI timings (see the p25-p75 columns)", file=sys.stderr)


def _progress_bar(total: int, desc: str, quiet: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=quiet, leave=False, file=sys.stderr)


def compute_after_sizes(text: str, grad_bytes: int) -> tuple[int, ...]:
    """The sizes (bytes, whole float32 elements, increasing) of ``--compute-after``: sizes as
    perfmodel.lab.profile.comm.parse_size reads them, "grad" for ``grad_bytes``, "none" for none."""
    from .comm import parse_size

    out: set[int] = set()
    for item in (t.strip() for t in str(text).split(",")):
        if item == "none" and text.strip() == "none":
            return ()
        try:
            n = grad_bytes if item == "grad" else parse_size(item)
        except ValueError:
            raise ProfileError(f"--compute-after: bad size {item!r}; use sizes like 1Mi, grad or none") from None
        if n < 1:
            raise ProfileError(f"--compute-after: sizes must be positive, got {item!r}")
        out.add(-(-n // 4) * 4)
    return tuple(sorted(out))


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse a nonsensical count or time, and --kernel-load without --link, before any work starts
    (ProfileError, one line); an unset --kernel-load becomes its default, 2 seconds."""
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ProfileError(f"--timeout must be a finite number of seconds > 0, got {args.timeout}")
    if args.kernel_load is not None and not getattr(args, "link", False):
        raise ProfileError("--kernel-load measures the network between two nodes: it goes with --link")
    args.kernel_load = 2.0 if args.kernel_load is None else args.kernel_load
    if not (math.isfinite(args.kernel_load) and args.kernel_load >= 0):
        raise ProfileError(f"--kernel-load must be >= 0 seconds, got {args.kernel_load}")
    for option, value, least in (("--comm-repeats", args.comm_repeats, 3), ("--threads", args.threads, 1),
                                 ("--warmup", args.warmup, 0), ("--repeats", args.repeats, 3)):
        if value < least:
            raise ProfileError(f"{option} must be >= {least}, got {value}")


def run_profile_command(args: argparse.Namespace) -> int:
    """Run ``perfmodel profile``; returns the exit status (errors raise ProfileError)."""
    from .comm import default_sizes, parse_extra_sizes, parse_size

    if getattr(args, "link", False):  # the network between two nodes, and with a model the step after it
        if args.ranks not in ("1,2", "2"):
            raise ProfileError(f"--link measures 2 ranks, one on each of two nodes; got --ranks {args.ranks}")
        args.ranks, args.no_compute = "2", True
        if args.ops == DEFAULT_OPS:
            args.ops = LINK_OPS
    ranks = sorted(set(int_list(args.ranks, "ranks")))
    batches = sorted(set(int_list(args.batch, "batch")))
    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip())
    bad = [o for o in ops if o not in COMM_OPS]
    if bad or not ops:
        raise ProfileError(f"--ops: unknown operation {bad[0] if bad else args.ops!r}; choose from {', '.join(COMM_OPS)}")
    try:
        sizes = default_sizes(parse_size(args.min_bytes), parse_size(args.max_bytes))
        extra = parse_extra_sizes(args.extra_sizes)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    unused = [op for op, _ in extra if op not in ops]
    if unused:
        raise ProfileError(f"--extra-sizes for {unused[0]!r}, which --ops does not time ({', '.join(ops)})")
    timed = len(ops) * len(sizes) + sum(len(set(more) - set(sizes)) for _, more in extra)
    compute_after_sizes(args.compute_after, 4)  # bad sizes fail here, before anything is timed
    check_numbers(args)
    if not args.no_compute and not (args.workload or args.model):
        raise ProfileError("give --workload NAME or --model MODULE:CALLABLE (or --no-compute)")
    if not args.no_compute and len(batches) < 2:
        raise ProfileError(f"--batch needs at least 2 batch sizes to fit t_c(b) = t0 + t1*b, got {args.batch!r}")
    out_path = Path(args.out)
    if out_path.is_dir():
        raise ProfileError(f"--out {out_path} is a directory")
    input_shape = None
    if args.input_shape:
        input_shape = tuple(int_list(args.input_shape, "input-shape"))
    multi = [r for r in ranks if r > 1]
    if args.launcher and args.mpiexec:
        raise ProfileError("give --launcher or --mpiexec, not both")
    launcher = None
    if multi:
        option = args.launcher or (shlex.quote(args.mpiexec) if args.mpiexec else None)
        if args.mpiexec_args.strip():
            base = option or os.environ.get("DSGD_LAUNCHER", "").strip() or "mpiexec"
            option = f"{base} {args.mpiexec_args}"
        try:
            launcher = resolve_launcher(option, hostfile=args.hostfile)
        except SpecError as exc:
            raise ProfileError(f"{exc} (or pass --ranks 1)") from None
    mpiexec = launcher.argv[0] if launcher is not None else shutil.which("mpiexec")
    if not args.no_compute:
        from .compute import resolve_device

        resolve_device(args.device)  # --device cuda without a GPU: one line before any work

    gpus = 0
    if args.nccl != "off":
        from .compute import torch_environment

        try:
            gpus = torch_environment()["gpu_count"]
        except ImportError:  # no torch: no NCCL either
            gpus = 0
        if args.nccl == "on" and gpus == 0:
            raise ProfileError("--nccl on needs a CUDA GPU, and torch sees none")
    nccl_ranks = [r for r in multi if gpus and r <= gpus]
    if args.nccl == "on" and not nccl_ranks:
        raise ProfileError(f"--nccl on: no rank count above 1 in --ranks {args.ranks} fits the {gpus} GPU(s) "
                           f"(NCCL needs one GPU per rank)")
    model = info = compute = None
    if args.workload or args.model:
        from .compute import load_callable_model, load_workload_model

        model, info = (load_workload_model(args.workload) if args.workload
                       else load_callable_model(args.model, input_shape))
    if not args.no_compute:
        from .compute import profile_compute

        bar = _progress_bar(len(batches), "compute", args.quiet)
        with bar:
            compute = profile_compute(model, info.input_shape, info.num_classes, batches, warmup=args.warmup,
                                      repeats=args.repeats, device=args.device, threads=args.threads,
                                      progress=lambda b: bar.update(1))

    module_args = ["--min-bytes", str(sizes[0]), "--max-bytes", str(sizes[-1]), "--ops", ",".join(ops),
                   "--repeats", str(args.comm_repeats), "--fit-stat", args.fit_stat, "--timing", args.comm_timing]
    for op, more in extra:
        module_args += ["--extra-sizes", f"{op}={','.join(map(str, more))}"]
    if getattr(args, "link", False) and args.kernel_load > 0:  # the kernel's CPU per byte between the nodes
        module_args += ["--kernel-load", repr(args.kernel_load)]
    # --link with a model: the step on the two ranks after an exchange over the link (what a network
    # exchange does to the compute that follows it: perfmodel.lab.profile.predictor, the link's after-exchange slowdown)
    link_compute = getattr(args, "link", False) and info is not None
    if (not args.no_compute and compute is not None and compute.device == "cpu") or link_compute:
        # CPU ranks share the machine: time the step on all ranks of each MPI run at once, too
        module_args += (["--workload", args.workload] if args.workload
                        else ["--model", args.model] + (["--input-shape", args.input_shape] if args.input_shape else []))
        module_args += ["--batch", ",".join(map(str, batches)), "--compute-warmup", str(args.warmup),
                        "--compute-repeats", str(args.repeats), "--threads", str(args.threads)]
        after = compute_after_sizes(args.compute_after, 4 * sum(info.tensor_sizes))
        if after:
            module_args += ["--compute-after", ",".join(map(str, after))]
    runs: list[tuple[int, str]] = [(r, "mpi") for r in ranks]
    runs += [(r, "nccl") for r in nccl_ranks]
    comm: list[CommProfile] = []
    library = ""
    _warn_if_busy(multi, args.quiet)
    for r, backend in runs:
        if r == 1:
            comm.append(CommProfile(ranks=1, backend=backend, library="", hosts=(socket.gethostname(),),
                                    wall_s=0.0, ops={}))
            continue
        bar = _progress_bar(timed, f"{backend} x{r}", args.quiet)
        with bar:
            cp = run_comm(None, r, backend=backend, module_args=module_args, launcher=launcher,
                          timeout=args.timeout, on_progress=lambda: bar.update(1))
        if getattr(args, "link", False) and len(set(cp.hosts)) < 2:
            raise ProfileError(f"--link: both ranks ran on {cp.hosts[0]}; place one rank on each of two nodes "
                               f"(--hostfile with two hosts, --mpiexec-args '--map-by ppr:1:node', or "
                               f"`perfmodel emulate --nodes 2 -- perfmodel profile --link ...`)")
        comm.append(cp)
        if backend == "mpi":
            library = library or cp.library

    profile = Profile(schema_version=SCHEMA_VERSION,
                      created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                      command=shlex.join(sys.argv), machine=describe_machine(mpiexec=mpiexec, mpi_library=library),
                      model=info, compute=compute, comm=tuple(comm))
    save_profile(profile, out_path)
    if not args.quiet:
        print(format_summary(profile))
        print(f"wrote {out_path}")
    return 0


# ---------------------------------------------------------------- reporting


def _bytes(n: float) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            return f"{n / div:g} {unit}"
    return f"{n:g} B"


def _us(t: float) -> str:
    return f"{t * 1e6:.1f}" if t < 1e-2 else f"{t * 1e6:.0f}"


def format_summary(profile: Profile) -> str:
    """Human-readable tables: compute per batch with the fit, and per comm run each op's fit and the
    Allreduce fitted-vs-measured table."""
    m = profile.machine
    lines = [f"profile schema {profile.schema_version}, {profile.created}, {m.hostname}: {m.cpu_model}, "
             f"{m.cpu_cores} CPUs" + (f", {m.gpu_count} x {m.gpu_name}" if m.gpu_count else "")
             + (f", torch {m.torch_version}" if m.torch_version else "")
             + (f", {m.mpi_library}" if m.mpi_library else "")]
    if profile.model is not None:
        mi = profile.model
        lines.append(f"model {mi.name}: {mi.parameters} parameters in {len(mi.tensor_sizes)} tensors, "
                     f"gradient {_bytes(mi.gradient_bytes)}")
    c = profile.compute
    if c is not None:
        lines.append(f"compute on {c.device_name} ({c.device}, {c.threads} thread(s)), median of {c.repeats} steps:")
        lines.append(f"  {'batch':>6} {'fwd ms':>8} {'bwd ms':>8} {'step ms':>8} {'total ms':>9} {'IQR %':>6} {'fit ms':>8}")
        for r in c.rows:
            iqr = (r.total.p75_s - r.total.p25_s) / r.total.median_s
            lines.append(f"  {r.batch:>6} {r.forward.median_s * 1e3:8.3f} {r.backward.median_s * 1e3:8.3f} "
                         f"{r.step.median_s * 1e3:8.3f} {r.total.median_s * 1e3:9.3f} {iqr:6.1%} "
                         f"{float(c.fit(r.batch)) * 1e3:8.3f}")
        lines.append(f"  t_c(b) = {c.fit.intercept * 1e3:.4f} ms + {c.fit.slope * 1e6:.3f} us * b "
                     f"(max error {c.fit.max_rel_err:.1%}); t_cg = {c.t_cg * 1e3:.4f} ms")
    for run in profile.comm:
        if not run.ops:
            lines.append(f"{run.backend} x{run.ranks}: one rank, no communication (cost 0)")
            continue
        load = f", load average {'->'.join(f'{v:.1f}' for v in run.load_avg)}" if run.load_avg else ""
        lines.append(f"{run.backend} x{run.ranks} ({run.library}), {run.wall_s:.1f} s{load}:")
        cc = run.compute
        if cc is not None:
            lines.append(f"  training step on all {run.ranks} ranks at once ({cc.repeats} rounds): "
                         + "; ".join(f"batch {b}: mean {m * 1e3:.3f} ms, slowest {x * 1e3:.3f} ms, cv {v:.2f}"
                                     for b, m, x, v in zip(cc.batches, cc.mean_s, cc.max_s, cc.cv)))
            if cc.codec is not None and cc.codec.sync_wait_s is not None:
                lines.append(f"  TernGrad's codec on all {run.ranks} ranks at once: encode "
                             f"{cc.codec.encode.median_s * 1e3:.3f} ms, decode {cc.codec.decode.median_s * 1e3:.3f} ms; "
                             f"each synchronization point after its work {cc.codec.sync_wait_s * 1e3:.3f} ms "
                             f"beyond the exchange's own time")
            ov = cc.overlap
            if ov is not None:
                lines.append(f"  backprop with an Allreduce of the gradient ({_bytes(ov.nbytes)}) on all {run.ranks} "
                             f"ranks, alone -> together (ms): " + "; ".join(
                                 f"batch {b}: backprop {a * 1e3:.2f} -> {a2 * 1e3:.2f}, Allreduce {c * 1e3:.2f} -> "
                                 f"{c2 * 1e3:.2f}, slowdowns sigma {ov.slowdowns(b)[0]:.2f} mu {ov.slowdowns(b)[1]:.2f}"
                                 for b, a, c, a2, c2 in zip(ov.batches, ov.compute_s, ov.comm_s, ov.both_compute_s,
                                                            ov.both_comm_s)))
        kl = run.kernel_load
        if kl is not None:
            lines.append(f"  kernel network CPU: {kl.s_per_byte * 1e9:.3f} ms per MB sent between the hosts "
                         f"(irq+softirq {kl.busy_kernel_s:.2f} s over {kl.busy_wall_s:.1f} s moving "
                         f"{kl.bytes_sent / 1e6:.0f} MB, {kl.idle_kernel_s:.2f} s over {kl.idle_wall_s:.1f} s idle; "
                         f"the ranks' own system time {kl.busy_sys_s:.2f} s, not charged)")
        for name, op in run.ops.items():
            f = op.fit
            lines.append(f"  {name:>9}: alpha {f.alpha_s * 1e6:.2f} us, bandwidth {f.bandwidth_Bps / 1e9:.2f} GB/s "
                         f"(one line, max error {f.max_rel_err:.0%}); {len(f.segments)} segment(s), "
                         f"max error {f.piecewise_max_rel_err:.1%}; peak busbw {max(op.busbw_Bps) / 1e9:.2f} GB/s")
        ar = run.ops.get("allreduce")
        if ar is not None:
            lines.append(f"  allreduce fitted vs measured ({run.ranks} ranks, fit to the {ar.fit_stat}):")
            lines.append(f"  {'size':>10} {'median us':>10} {'p25-p75 us':>17} {'min us':>9} {'fit us':>9} "
                         f"{'err':>7} {'line us':>9} {'busbw GB/s':>10}")
            fit_t = ar.fit.time(ar.sizes_bytes)
            line_t = ar.fit.time(ar.sizes_bytes, piecewise=False)
            for i, (n, ref) in enumerate(zip(ar.sizes_bytes, ar.times())):
                lines.append(f"  {_bytes(n):>10} {_us(ar.median_s[i]):>10} "
                             f"{_us(ar.p25_s[i]) + '-' + _us(ar.p75_s[i]):>17} {_us(ar.min_s[i]):>9} "
                             f"{_us(fit_t[i]):>9} {(fit_t[i] - ref) / ref:+7.1%} {_us(line_t[i]):>9} "
                             f"{ar.busbw_Bps[i] / 1e9:10.3f}")
    lines += layout_lines(profile)
    return "\n".join(lines)


def _show(args: argparse.Namespace) -> int:
    profile = load_profile(args.file)
    if not args.gpu_topology:
        print(format_summary(profile))
    elif profile.machine.gpu_topology.strip():
        print(profile.machine.gpu_topology.rstrip("\n"))
    else:
        raise ProfileError(f"{args.file}: no GPU layout recorded (`perfmodel profile` records `nvidia-smi topo -m` "
                           f"on a machine with two or more GPUs)")
    return 0


# ---------------------------------------------------------------- standalone entry point


def add_show_parser(subparsers: Any, name: str = "show") -> None:
    """Add the subcommand that prints a profile's tables."""
    show = subparsers.add_parser(name, help="print a profile's tables")
    show.add_argument("file")
    show.add_argument("--gpu-topology", action="store_true",
                      help="print only the recorded `nvidia-smi topo -m` (the file `perfmodel predict --gpu-topology` "
                           "takes)")
    show.set_defaults(func=_show)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmodel.lab.profile.cli [profile] ...`` or ``... show FILE``; exit 2 on bad input."""
    from ...cli_guard import run_guarded

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("profile", "show", "-h", "--help"):
        argv = ["profile", *argv]
    parser = argparse.ArgumentParser(prog="python -m perfmodel.lab.profile.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    add_profile_parser(sub)
    add_show_parser(sub)
    args = parser.parse_args(argv)
    return run_guarded(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
