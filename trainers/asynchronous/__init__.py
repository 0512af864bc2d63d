"""Asynchronous training, the asynchronous family of ``trainers run`` and ``trainers simulate``.

One module a job:

- ``masters``: the master rules (ASGD, NAG-ASGD, staleness-aware, softsync, gap-aware, DANA, Adam ...),
  transport-free; ``gem``: the worker-side rescalings of the GEM family (GEM, Downpour, adaptive staleness).
- ``config``: :class:`AsyncConfig`, the algorithm registry ``ALGOS`` (derived from the master rules and
  the worker rules) and the run's budget (``Plan``).
- ``data_streams``: a worker's deterministic batches, batch times and seeds; ``flat_model``: the model
  as one flat vector and the rule objects built from a config; ``evaluate``: test loss and accuracy;
  ``cli_args``: the command-line options; ``reporting``: the run-log header and step windows.
- ``ps``: a real parameter server over MPI; ``simulate``: the event-driven simulator of N workers.

The parameter server and the simulator build everything from one ``AsyncConfig`` through these
modules, so that a worker's k-th gradient is the same computation in both.
"""
