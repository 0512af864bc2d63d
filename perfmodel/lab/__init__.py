"""perfmodel's lab: what measures, launches and checks, above the model and the trainers.

profile/ (perfmodel profile: one node's compute, codecs and collectives, a link between two nodes; the
profile's JSON form and its conversion to the model's specs; the one predictor from a profile), validate
(perfmodel validate: a run's log against the prediction of its `perfmodel predict` command), emulate
(perfmodel emulate: nodes as network namespaces joined by rate-limited links) and launcher (mpiexec and
process groups). The only part of perfmodel that imports trainers; the model (specs, presets,
collectives, scaling, plan) imports nothing from here (tests/test_layout.py).
"""
