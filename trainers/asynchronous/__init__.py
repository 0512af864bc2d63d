"""Asynchronous training, the asynchronous family of ``trainers run`` and ``trainers simulate``.

One module a job:

- ``masters``: the master rules (ASGD, NAG-ASGD, staleness-aware, softsync, gap-aware, DANA, Adam ...),
  transport-free; ``gem``: the worker-side rescalings of the GEM family (GEM, Downpour, adaptive staleness).
- ``algos``: the algorithm registry ``ALGOS`` (derived from the master rules and the worker rules);
  ``config``: the run's budget (``Plan``), and :class:`AsyncConfig` re-exported from trainers.config
  (where both families' configurations live).
- ``data_streams``: a worker's deterministic batches, batch times and seeds; ``flat_model``: the model
  as one flat vector and the rule objects built from a config; ``evaluate``: test loss and accuracy;
  ``cli_args``: the command-line options; ``reporting``: the run-log header and step windows.
- ``ps``: a real parameter server over MPI (its entry points), ``ps_server`` (the server loop),
  ``ps_worker`` (the worker loop), ``ps_messages`` (the wire protocol, waiting without spinning);
  ``simulate``: the event-driven simulator of N workers.

The parameter server and the simulator build everything from one ``AsyncConfig`` through these
modules, so that a worker's k-th gradient is the same computation in both.
"""
