"""`perfmodel predict` refuses what it cannot honour and warns about options no chosen strategy reads
(perfmodel.cli_checks), and the straggler model never shows a speedup within its bound."""

import math

import numpy as np
import pytest

from perfmodel.cli import build_parser, main
from perfmodel.cli_checks import STRATEGY_OPTIONS, MAX_STEP_COMPUTE_S
from perfmodel.stragglers import CVB, MAX_STRAGGLER_CV, combined_cv, sync_slowdown

PROFILE = "results/validation/profile_resnet20_small.json"
BASE = ["predict", "--workload", "resnet50", "--cluster", "dgx1-v100", "--gpus", "1,8", "--format", "json"]

# (arguments after BASE or a full argv, exit status, the one stderr line's text; None: no stderr)
TABLE = [
    (["predict", "--profile", PROFILE, "--samples-per-s", "100"], 2, "give --profile or --samples-per-s, not both"),
    (["predict", "--profile", PROFILE, "--compute-ms", "5"], 2, "give --profile or --compute-ms, not both"),
    (BASE + ["--stragglers", "2"], 2, "physical bound 1"),
    (BASE + ["--stragglers", "5"], 2, "combined coefficient of variation 5 is beyond"),
    # (1 + 0.64)^2 - 1 = 1.6896, sqrt 1.2998
    (BASE + ["--stragglers", "0.8,0.8"], 2, "combined coefficient of variation 1.3 is beyond"),
    (BASE + ["--stragglers", "0.1,1e300"], 2, "combined coefficient of variation 1e+300 is beyond"),
    (BASE + ["--stragglers", "1e-300"], 2, "below 1e-06 is no spread a timer can see"),  # 1/CV^2 overflowed
    (BASE + ["--stragglers", "0.1,1e-7"], 2, "below 1e-06 is no spread a timer can see"),
    (BASE + ["--compute-ms", "1e308"], 2, "more than a day"),
    (BASE + ["--samples-per-s", "1e-9"], 2, "more than a day"),
    (BASE + ["--strategy", "ssgd", "--daso-b", "2"], 0, "perfmodel: warning: --daso-b applies to daso only"),
    (BASE + ["--strategy", "ssgd", "--ps-placement", "dedicated"], 0, "--ps-placement applies to sync-ps, byteps only"),
    (BASE + ["--profile-links", "intra"], 0, "--profile-links applies only with --profile"),
    (BASE + ["--strategy", "daso", "--daso-b", "2"], 0, None),
    (BASE + ["--stragglers", "1"], 0, None),
    (BASE + ["--stragglers", "0,0.5"], 0, None),  # machines of spread speeds, each steady
    (BASE + ["--compute-ms", "86400000"], 0, "compute sources disagree"),  # a day is accepted, with the warning
]


@pytest.mark.parametrize("argv,status,text", TABLE)
def test_predict_refusals_and_warnings(capsys, argv, status, text):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == status, err
    if text is None:
        assert err == ""
    else:
        assert err.count("\n") == 1 and text in err, err
        assert err.startswith("perfmodel: error: " if status else "perfmodel: warning: ")
    if status == 0:
        assert out.startswith("[")  # the prediction still printed


def test_profile_with_workload_keeps_the_rate(capsys):
    """With --workload the compute option sets that workload's time: nothing is dropped, nothing refused."""
    code = main(["predict", "--profile", PROFILE, "--workload", "resnet20", "--samples-per-s", "100",
                 "--gpus", "1", "--strategy", "ssgd", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    import json

    rec = json.loads(out)[0]
    assert rec["t_compute_s"] == pytest.approx(32 / 100)  # default batch 32 at 100 samples/s


def test_option_table_defaults_match_the_parser():
    """The table's defaults are the parser's: a default changed there must change here too."""
    args = build_parser().parse_args(["predict"])
    for flag, dest, default, _ in STRATEGY_OPTIONS:
        assert getattr(args, dest) == default, flag


def test_a_day_is_the_compute_bound():
    assert MAX_STEP_COMPUTE_S == 24 * 3600


def test_combined_cv():
    assert combined_cv(0.3) == pytest.approx(0.3)
    assert combined_cv(0.0, 0.4) == pytest.approx(0.4)
    # (1 + a^2)(1 + b^2) - 1 = 2 * 2 - 1 = 3 for a = b = 1
    assert combined_cv(1.0, 1.0) == pytest.approx(math.sqrt(3))


@pytest.mark.parametrize("model", [CVB(1, 0, 1.0, False), CVB(1, 0, 0.5, False), CVB(1, 0.1, 0.99, True),
                                   CVB(1, 0.7, 0.7, True)])
def test_no_speedup_within_the_bound(model):
    """Within the bound the expected slowest of W is at least one task and grows with W: efficiency <= 100%."""
    assert combined_cv(model.v_task, model.v_mach) <= MAX_STRAGGLER_CV or model.heterogeneous
    w = np.array([1, 2, 4, 8, 64, 512])
    s = sync_slowdown(w, model)
    assert s[0] == pytest.approx(1.0, abs=1e-6)
    assert np.all(np.diff(s) > 0) and np.all(s >= 1.0)


def test_exponential_max_is_the_harmonic_number():
    """CV 1 is the exponential distribution: E[max of W] = H_W (1.5 at 2, 6.7928 + ... at 512)."""
    w = np.array([2, 8, 512])
    expected = [sum(1 / k for k in range(1, n + 1)) for n in w]
    assert sync_slowdown(w, CVB(1, 0, 1.0, False)) == pytest.approx(expected, rel=1e-4)


def test_plot_written_before_the_table(tmp_path):
    """A reader that leaves at once (`| head`) must not cost the PNG: it is written before the text."""
    import subprocess
    import sys

    png = tmp_path / "p.png"
    main_cmd = "import sys; from perfmodel.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", main_cmd, *BASE, "--plot", str(png)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is printed
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert png.stat().st_size > 1000
