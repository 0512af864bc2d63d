"""A real parameter server over MPI that drives a transport-free master rule (trainers.asynchronous.masters).

Rank 0 holds the central parameters and the rule; ranks 1..K-1 are the N = K - 1 workers
(worker w = rank w + 1). A worker pulls parameters, computes a gradient on its next batch (the
same BatchStream, seeds and model code as trainers.asynchronous.simulate), optionally pads the batch to a time
drawn from the gamma CVB model (--delays homogeneous|heterogeneous, --delay-mean seconds) so that
stragglers can be emulated on one machine, and pushes. The server receives from any source (no
barriers anywhere), applies the rule, and answers with the parameters to use next.

Messages (float64 headers, float32 payloads of the flat parameter size P)::

    worker -> server  tag UP_HDR  [kind, loss, t_compute, t_idle, k, samples, t_exchange]
                                  kind GRAD: a payload follows; kind REQUEST: GEM family, wants the
                                  central parameters first; t_exchange: seconds of the worker's
                                  previous exchange (-1 before its first one)
                      tag UP_DATA the gradient (or the worker's finished update)
    server -> worker  tag DN_HDR  [kind, lr, tau]  kind PARAMS or CENTRAL (a payload follows), STOP
                      tag DN_DATA parameters

Run log (rank 0; trainers.log): one step line per ``log_every`` gradients applied, over the gradients
since the previous line: t_compute and t_idle the workers' mean batch and padding times; t_comm the
workers' mean exchange time as each worker times it (push start to new parameters in hand: push, the
wait for the server, pull; null when no gradient of the window reported one); t_step the server's
seconds per gradient applied (1 / the aggregate rate); t_server the server's mean seconds per gradient
(receive the payload, apply, post the answer); bytes_exchanged the mean payload bytes per gradient
between its worker and the server, both directions (push + pull; headers not counted, as trainers.log
leaves out the loss); bytes_sent the workers' pushed bytes. The header says ``exchange``: "push-pull"
(one payload each way) or "central-round-trip" (GEM family: central parameters, update, parameters).

GEM and adaptive staleness need the central parameters (or tau) at commit time: the worker sends
REQUEST, the server answers CENTRAL and then waits for that worker's update before serving anybody
else, so the commit is atomic as in the simulator.

Shutdown: when the budget is spent (or training diverges) every further push is answered with
STOP; the server returns once every worker has been stopped. A worker that raises aborts the job
(trainers.comm.abort_on_error); a worker that dies is noticed by mpiexec, which ends the job; a
worker that hangs is noticed by the server: if a worker it waits for is silent for longer than
--worker-timeout seconds, it prints one line and aborts the job.

Replay: --replay-order FILE (written by ``trainers simulate --record-order``) makes the server
process pushes in exactly the recorded order, buffering early arrivals; the final parameters then
equal the simulator's.

    mpiexec -n 9 python -m trainers.asynchronous.ps --algo ga --model gem-cnn --dataset mnist --epochs 1 --log ps.jsonl
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

import torch

from trainers.config import NO_MODEL, PS_DEFAULTS, AsyncConfig, PSOptions, defaults, ps_options
from trainers.comm import abort_on_error
from trainers.device import DEVICES, env_world, select_worker_device
from trainers.errors import DIVERGED_STATUS, DivergenceError, TrainerError, UsageError, refuse_on_rank0
from trainers.validators import check_new_log, check_output_file
from trainers.asynchronous.cli_args import StrictParser, add_async_arguments, config_from_args, parse_or_status
from trainers.asynchronous.data_streams import load_data
from trainers.asynchronous.ps_messages import load_order
from trainers.asynchronous.ps_server import PSResult, Server
from trainers.asynchronous.ps_worker import work

__all__ = ["PSOptions", "PSResult", "run_ps", "run_from_config", "load_order", "diverged_everywhere",
           "divergence_message", "print_result", "add_ps_arguments", "ps_from_args", "ps_main", "main"]


def run_ps(cfg: AsyncConfig, comm: Any, options: PSOptions | None = None) -> PSResult | None:
    """Run the parameter server job on ``comm`` (rank 0 serves, the other ranks work; cfg.log is rank 0's
    run log, cfg.threads torch threads per rank, cfg.device where the workers compute).

    cfg.workers must equal comm size - 1. Returns the PSResult on rank 0 and None on workers.
    Raises TrainerError for fewer than 2 ranks or a mismatched worker count.
    """
    opt = options or PSOptions()
    size = comm.Get_size()
    if size < 2:
        raise TrainerError(f"the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work); "
                           f"got {size}")
    if cfg.workers != size - 1:
        raise TrainerError(f"workers must be the number of MPI ranks minus one ({size - 1}), got {cfg.workers}")
    if opt.fail_worker is not None and opt.fail_worker >= cfg.workers:
        raise TrainerError(f"fail_worker must be in 0..{cfg.workers - 1}, got {opt.fail_worker}")
    torch.set_num_threads(cfg.threads)
    device = select_worker_device(cfg.device, comm)  # UsageError on every rank alike
    with abort_on_error(comm):
        if comm.Get_rank() == 0:
            return Server(cfg, comm, opt).run()
        work(cfg, comm, opt, device)
        return None


def run_from_config(cfg: AsyncConfig, comm: Any) -> None:
    """``trainers run --algo <async algo>``: the parameter server on comm (every rank calls it), with
    PSOptions from cfg.options and cfg.fail_rank / cfg.fail_at_step (trainers.config.ps_options).

    Bad input (fewer than 2 ranks, cfg.workers not the ranks minus one, a bad option, a missing
    dataset or replay order) raises UsageError on every rank alike; a diverged run raises
    DivergenceError on every rank unless cfg.allow_divergence."""
    try:
        size = comm.Get_size()
        if size < 2:
            raise TrainerError("the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work): "
                               "start it with mpiexec -n K, K >= 2")
        if cfg.workers != size - 1:
            raise TrainerError(f"workers must be the number of MPI ranks minus one ({size - 1}), got {cfg.workers}")
        options = ps_options(cfg)
        if options.replay_order:
            load_order(options.replay_order, cfg.workers)
        if cfg.model != NO_MODEL:
            load_data(cfg, test=False)
    except ValueError as exc:
        raise UsageError(" ".join(str(exc).split())) from None
    result = run_ps(cfg, comm, options)
    if diverged_everywhere(comm, result) and not cfg.allow_divergence:
        raise DivergenceError(divergence_message(result, cfg.log))
    if result is not None:
        print_result(cfg, result)


def diverged_everywhere(comm: Any, result: PSResult | None) -> bool:
    """Rank 0's verdict (its summary's "diverged") on every rank: one broadcast after the run."""
    return bool(comm.bcast(bool(result.summary.get("diverged")) if result is not None else None, root=0))


def divergence_message(result: PSResult | None, log: str | None) -> str:
    applied = result.summary.get("gradients") if result is not None else None
    return ("training diverged: a worker pushed a non-finite loss"
            + (f" after {applied} gradients were applied" if applied is not None else "") + "; stopped"
            + (f", run log {log}" if log else "") + "; pass --allow-divergence to accept it")


def print_result(cfg: AsyncConfig, result: PSResult) -> None:
    s = result.summary
    gap = f" gap_mean={s['gap_mean']:.3f}" if "gap_mean" in s else ""
    print(f"{cfg.algo} N={cfg.workers} (MPI): {s['gradients']} gradients, test_acc={s['final_test_acc']:.4f}, "
          f"tau_mean={s['tau_mean']:.3f} (delay {s['delay_mean']:.3f}){gap}, diverged={s['diverged']}, "
          f"wall {s['wall_s']:.1f} s", flush=True)


def add_ps_arguments(parser: argparse.ArgumentParser) -> None:
    """The AsyncConfig options (PS_DEFAULTS: delays none, real compute times) plus PSOptions."""
    add_async_arguments(parser, algo_flag="--algo")
    parser.set_defaults(workers=None, **PS_DEFAULTS)
    d = defaults(PSOptions)
    parser.add_argument("--replay-order", default=None, metavar="FILE",
                        help="process pushes in this recorded order (trainers simulate --record-order)")
    parser.add_argument("--worker-timeout", type=float, default=d["worker_timeout"],
                        help="seconds a worker may be silent before the server aborts the job")
    parser.add_argument("--poll", type=float, default=d["poll_s"], help="seconds between receive polls")
    parser.add_argument("--save-params", default=None, metavar="FILE.npy", help="write the final parameters")
    parser.add_argument("--device", default=defaults(AsyncConfig)["device"], choices=DEVICES,
                        help="where the workers compute gradients (one GPU per worker; the server stays on the CPU)")
    parser.add_argument("--allow-divergence", action="store_true",
                        help="a diverged run is an outcome, not an error: exit 0 (default: exit 3)")
    parser.add_argument("--fail-worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fail-after", type=int, default=d["fail_after"], help=argparse.SUPPRESS)
    parser.add_argument("--fail-mode", default=d["fail_mode"], help=argparse.SUPPRESS)


def ps_from_args(args: argparse.Namespace) -> int:
    """Run the parameter server from parsed add_ps_arguments options; exit status.

    The configuration is checked on every rank before MPI starts; a bad one prints one line (on
    rank 0) and returns 2 everywhere."""
    rank, size = env_world()
    try:
        if size is None:
            from mpi4py import MPI

            size = MPI.COMM_WORLD.Get_size()
        if size < 2:
            raise TrainerError("the parameter server needs at least 2 MPI ranks (rank 0 serves, the rest work): "
                              "start it with mpiexec -n K, K >= 2")
        if args.workers is None:
            args.workers = size - 1
        elif args.workers != size - 1:
            raise TrainerError(f"--workers must be the number of MPI ranks minus one ({size - 1}), got {args.workers}")
        cfg = config_from_args(args)
        opt = PSOptions(replay_order=args.replay_order, worker_timeout=args.worker_timeout, poll_s=args.poll,
                        save_params=args.save_params, fail_worker=args.fail_worker, fail_after=args.fail_after,
                        fail_mode=args.fail_mode)
        for option, path in (("--log", cfg.log), ("--save-params", opt.save_params)):
            check_output_file(option, path)  # before training: a run must not fail at its end
        if rank == 0:  # the server writes the log; its refusal ends the launcher's job
            check_new_log(cfg.log, None)
        if opt.replay_order:
            load_order(opt.replay_order, cfg.workers)
        if opt.fail_worker is not None and opt.fail_worker >= cfg.workers:
            raise TrainerError(f"--fail-worker must be in 0..{cfg.workers - 1}, got {opt.fail_worker}")
        if cfg.model != NO_MODEL:
            load_data(cfg, test=False)  # a missing dataset is a configuration error, found before MPI starts
    except ValueError as exc:
        return refuse_on_rank0(rank, f"trainers ps: error: {' '.join(str(exc).split())}")
    from mpi4py import MPI

    try:
        result = run_ps(cfg, MPI.COMM_WORLD, opt)
    except UsageError as exc:  # raised on every rank alike (e.g. --device cuda without a GPU)
        return refuse_on_rank0(rank, f"trainers ps: error: {exc}")
    if diverged_everywhere(MPI.COMM_WORLD, result) and not cfg.allow_divergence:
        return refuse_on_rank0(rank, f"trainers ps: error: {divergence_message(result, cfg.log)}", DIVERGED_STATUS)
    if result is not None:
        print_result(cfg, result)
    return 0


def ps_main(argv: Sequence[str] | None = None) -> int:
    """``mpiexec -n K python -m trainers.asynchronous.ps ARGS``; exit status (2: bad input, one line on rank 0)."""
    parser = StrictParser(prog="trainers ps", description=__doc__.split("\n\n")[0])
    add_ps_arguments(parser)
    args = parse_or_status(parser, argv, show_error=env_world()[0] == 0)
    return args if isinstance(args, int) else ps_from_args(args)


main = ps_main

if __name__ == "__main__":
    sys.exit(ps_main())
