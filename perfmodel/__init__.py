"""Analytical throughput model for data-parallel training, 1 to 512 GPUs.

Importing this package never imports torch or mpi4py; the profiling hooks import them lazily.
"""
