"""TernGrad's encode path against a plain copy of the float32 gradient, side by side in one process.

    python benchmarks/terngrad_encode.py [--elems 25000000] [--repeats 7] [--threads 1]

Times, on the same random gradient (medians of --repeats, after one warm-up call each):
  memcpy      ``g.clone()`` of the float32 gradient (a new tensor, as the old path allocated);
  encode      what the trainer runs per step: the scaler (2.5 sigma) and the fused stochastic
              ternarize + 2-bit pack (trainers.compress.scaler, encode_packed), into a new buffer;
  old path    the previous torch path (scaler, ternarize with a torch.Generator, pack2bit), for
              reference.
Ends with the line ``encode/memcpy ratio X``. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import median_seconds  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elems", type=int, default=25_000_000, help="gradient elements (float32)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--skip-old", action="store_true", help="do not time the previous torch path")
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from trainers.compress import encode_packed, pack2bit, packed_nbytes, scaler, ternarize

    torch.set_num_threads(args.threads)
    g = torch.randn(args.elems, generator=torch.Generator().manual_seed(0)) * 1e-2
    starts = np.array([0, args.elems], dtype=np.int64)

    def encode() -> None:
        s = scaler(g, 2.5)
        encode_packed(g.numpy(), starts, np.array([s]), 12345, 0, np.empty(packed_nbytes(args.elems), np.uint8))

    def old() -> None:
        s = scaler(g, 2.5)
        pack2bit(ternarize(g, s, torch.Generator().manual_seed(1)))

    t_copy = median_seconds(lambda: g.clone(), args.repeats)
    t_enc = median_seconds(encode, args.repeats)
    print(f"elements        {args.elems:,}")
    print(f"memcpy          {t_copy * 1e3:9.1f} ms  (g.clone())")
    print(f"encode          {t_enc * 1e3:9.1f} ms  (scaler + fused ternarize + pack)")
    if not args.skip_old:
        t_old = median_seconds(old, max(1, args.repeats // 3))
        print(f"old torch path  {t_old * 1e3:9.1f} ms  (scaler + torch ternarize + pack2bit), "
              f"{t_old / t_copy:.1f}x memcpy")
    print(f"encode/memcpy ratio {t_enc / t_copy:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
