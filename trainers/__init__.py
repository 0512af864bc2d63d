"""Real distributed training: MPI trainers (synchronous and asynchronous) and a simulator.

Everything that runs under mpiexec lives here. Importing this package imports neither torch nor
mpi4py; the submodules that need them import them.
"""
