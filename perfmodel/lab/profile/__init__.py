"""Profiling hooks that feed the model with this machine's numbers.

    compute  time forward, backward and optimizer step of a torch module over batch sizes (torch)
    comm     ping-pong, Allreduce, Bcast, Reduce over message sizes under mpiexec (mpi4py; NCCL via torch)
    fit      least-squares fits: t_c(b) = t0 + t1 b and alpha-beta (single line and piecewise)
    schema   the versioned profile's records (dataclasses, validated on creation)
    profile_file  the profile JSON file: load_profile, save_profile
    to_specs the profile's conversion to Workload / Link / Cluster specs
    cli      the ``perfmodel profile`` subcommand

Importing this package (or fit, schema, profile_file, to_specs, comm, cli) imports neither torch nor mpi4py; compute
and comm import them inside the functions that need them. The step timer of the trainers' run logs
is trainers.timers (its only user).
"""
