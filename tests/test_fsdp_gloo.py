"""A real FSDP2 step over gloo on 2 CPU processes against perfmodel.sharded's counts and perfmodel.memory's
parameter shard (tests/fsdp_scripts/fsdp_step.py prints what torch's profiler recorded)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.memory import model_state_bytes
from perfmodel.sharded import collective_counts, sharded_bytes

SCRIPT = Path(__file__).parent / "fsdp_scripts" / "fsdp_step.py"


@pytest.mark.slow
def test_fsdp_over_gloo_moves_what_the_model_counts():
    pytest.importorskip("torch.distributed.fsdp")
    proc = subprocess.run([sys.executable, str(SCRIPT), "2"], capture_output=True, text=True, timeout=240)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        pytest.skip(f"FSDP over gloo did not run here: {proc.stderr.strip().splitlines()[-1:]}")
    rec = json.loads(lines[-1])
    w, psi = rec["world"], rec["parameters"]
    gathers = [c for c in rec["calls"] if c[0] == "gloo:all_gather"]
    scatters = [c for c in rec["calls"] if c[0] == "c10d::_reduce_scatter_base_"]
    gathered = sum(c[1][0][0] for c in gathers) * w  # each rank contributes its shard
    scattered = sum(c[1][1][0] for c in scatters)  # the full gradient buffer reduced
    n_ag, n_rs = collective_counts("fsdp", 1)
    assert gathered == n_ag * psi  # forward and backward gather every parameter once each
    assert scattered == n_rs * psi
    # bytes one GPU sends with ring collectives: 3 (W-1)/W x 4 psi
    ring = (gathered + scattered) * 4 * (w - 1) / w
    assert ring == pytest.approx(sharded_bytes("fsdp", 4.0 * psi, w))
    # gloo has no reduce-scatter: each one is an all_reduce of the whole buffer (2 (W-1)/W of it on a ring)
    reduces = [c for c in rec["calls"] if c[0] == "gloo:all_reduce"]
    assert sum(c[1][0][0] for c in reduces) == scattered
    # memory: each rank keeps psi / W of the parameters
    assert rec["local_parameters"] * 4 == model_state_bytes(psi, [w], stage=3)[0][0]
