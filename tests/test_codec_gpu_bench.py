"""benchmarks/codec_gpu.py: its kernels do the work perfmodel.codec_memory's byte counts describe (checked on
the CPU, eager, against the trainer's wire format), and its predictions are the model's charge."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.codec_gpu import WORKERS, kernels, predicted_seconds  # noqa: E402
from trainers.compress import pack2bit, unpack2bit  # noqa: E402


def test_prediction_is_bytes_over_efficient_bandwidth():
    # ResNet-50's 25,557,032 elements x 9 bytes (encode, levels) / (0.81 x 4.8e12 B/s) = 59.16 us
    assert predicted_seconds("encode levels", 25_557_032, 4.8e12) == pytest.approx(25_557_032 * 9 / 3.888e12)
    assert predicted_seconds("encode levels", 25_557_032, 4.8e12) == pytest.approx(5.91598e-05, rel=1e-5)
    # convert of an int32 sum: 16 bytes; decode of a packed copy: 8.25 bytes
    assert predicted_seconds("convert packed", 10**8, 4.8e12) == pytest.approx(1.6e9 / 3.888e12)
    assert predicted_seconds("decode", 10**8, 4.8e12) == pytest.approx(8.25e8 / 3.888e12)


def test_freeze_prints_predictions_without_a_gpu():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "codec_gpu.py"), "--freeze",
                          "--elements", "1000", "--memory-Bps", "1e12"], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    rec = json.loads(out[0])
    assert rec["elements"] == 1000
    assert rec["predicted_s"]["convert levels"] == pytest.approx(1000 * 13 / 0.81e12)


def test_kernels_encode_pack_decode_convert_as_the_trainer_wires_them():
    k = kernels()
    enc_levels, enc_packed = k["encode"]
    g = torch.randn(4096, generator=torch.Generator().manual_seed(3)) * 0.01
    g[0] = 1.0  # beyond clip x std: always kept, sign +1
    torch.manual_seed(7)
    codes = enc_levels(g)
    torch.manual_seed(7)
    packed = enc_packed(g)
    assert codes.dtype == torch.int8 and set(codes.unique().tolist()) <= {-1, 0, 1}
    assert codes[0] == 1
    # the same draws packed four per byte, first value in the lowest bits: the trainer's wire format
    assert torch.equal(packed, pack2bit(codes))
    assert torch.equal(unpack2bit(packed, g.numel()), codes)
    total = torch.full((g.numel(),), 5, dtype=torch.int32)
    k["decode"](packed, total)
    assert torch.equal(total, codes.to(torch.int32) + 5)
    to_float, divide = k["convert"]
    assert torch.equal(divide(to_float(total)), (codes.to(torch.float32) + 5) / WORKERS)
    # the scaler: clip x population std; a ternarized element's expectation is g where |g| <= s
    s = 2.5 * float(g.std(correction=0))
    assert math.isclose(float(torch.stack([enc_levels(g).float() for _ in range(400)]).mean(0)[1]) * s,
                        float(g[1]), abs_tol=4 * s / 20)
