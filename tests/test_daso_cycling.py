"""DASO that cycles (issue 31, part 3): the daso_cycling table at smoke scale shows the plateau detector
firing and B and W moving, per epoch, as the schedule's rule says."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reproduce.coquelin2021 import CYCLING, CYCLING_MAX_B
from trainers.sync.daso_schedule import DasoSchedule, DasoScheduleConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.mpi
@pytest.mark.slow  # two 4-rank runs of 12 tiny epochs
@pytest.mark.timeout(400)
def test_smoke_daso_cycling_moves_b_and_w_per_epoch(tmp_path):
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec not on PATH")
    res = subprocess.run([sys.executable, "-m", "reproduce", "coquelin2021", "--scale", "smoke", "--only",
                          "daso_cycling", "--out", str(tmp_path), "--no-progress"], capture_output=True, text=True,
                         timeout=360, env=dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1"), cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    table = pd.read_csv(tmp_path / "coquelin2021" / "daso_cycling.csv")
    c = CYCLING["smoke"]
    ((wd, cycling_epochs),) = c["runs"]
    epochs = c["warmup"] + cycling_epochs + c["cooldown"]
    assert set(table.weight_decay) == {wd}
    assert sorted(table[table.algo == "ssgd"].epoch) == list(range(1, epochs + 1))
    daso = table[table.algo == "daso"].sort_values("epoch")
    assert list(daso.epoch) == list(range(1, epochs + 1))
    # the paper's rule from max B = 8: (8, 2) on the first cycling epoch, which sets the detector's best;
    # with patience 0 and threshold 0.9 every later cycling epoch is a plateau: halve B and W (W >= 1)
    cycling = [(CYCLING_MAX_B, 2), (CYCLING_MAX_B, 2), (4, 1), (2, 1)]
    assert list(zip(daso.phase, daso.B, daso.W)) == (
        [("warmup", 1, 0)] * c["warmup"] + [("cycling", b, w) for b, w in cycling]
        + [("cooldown", 1, 0)] * c["cooldown"])
    assert daso.plateaus.max() == 3 and daso.plateau.sum() == 3

    # the batches used what the epoch records say (the step lines of the same log)
    log = tmp_path / "coquelin2021" / daso.log.iloc[0]
    used: dict[int, set] = {}
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "step":
            used.setdefault(int(rec["epoch"]) + 1, set()).add((rec["B"], rec["W"]))
    assert used == {e: {(b, w)} for e, b, w in zip(daso.epoch, daso.B, daso.W)}
    # and the schedule fed the logged training losses moves B and W the same way
    schedule = DasoSchedule(DasoScheduleConfig(total_epochs=epochs, warmup_epochs=c["warmup"],
                                               cooldown_epochs=c["cooldown"], max_b=CYCLING_MAX_B,
                                               patience=c["patience"], threshold=c["threshold"]))
    assert schedule.trace(list(daso.train_loss)) == list(zip(daso.phase, daso.B, daso.W))
