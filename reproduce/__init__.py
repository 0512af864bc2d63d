"""Scripts that rerun the five papers and the published numbers they are compared with.

Run one as ``dsgd-reproduce <paper> [options]``, ``python -m reproduce.<paper>`` or
``python reproduce/<paper>.py`` (the package must be installed, see the README's set-up).
"""

#: the runnable scripts: module name -> what it reruns
SCRIPTS: dict[str, str] = {
    "zhang2016": "Staleness-aware ASGD and n-softsync (Zhang et al. 2016)",
    "wen2017": "TernGrad (Wen et al. 2017)",
    "barkai2020": "Gap-Aware, DANA and their family (Barkai et al. 2020)",
    "hermans2018": "Gradient Energy Matching (Hermans & Louppe 2018)",
    "coquelin2021": "DASO (Coquelin et al. 2021)",
    "validation": "the throughput model against real MPI runs",
}
