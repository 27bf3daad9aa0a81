#!/usr/bin/env python3
"""Emulates STANDARD's 16-bit weight gradient dW_hh = sum_r dG[r]^T h[r] with the split state h = hi + lo.

Three ways, each against the float64 product of the unrounded dG and h (session 35, docs/performance.md):
  two GEMMs  round(round(dG^T hi) + dG^T lo)   what shipped until session 35 (beta = 1 into the 16-bit output)
  hi only    round(dG^T hi)                    what ships since (h rounded to the storage type, like dG)
  one round  round(dG^T (hi + lo))             the float h, rounded once (a K-doubled GEMM; same cost as two)
dG is rounded to the storage type in all three (the reserve keeps it so). Needs numpy.
"""
import numpy as np


def rounder(dt):
    if dt == "float16":
        return lambda a: np.asarray(a).astype(np.float16).astype(np.float64)

    def bf16(a):  # round to nearest even on the float32 bit pattern
        u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype(np.uint32).view(np.float32).astype(np.float64)

    return bf16


def main():
    rng = np.random.default_rng(1)
    for dt in ("float16", "bfloat16"):
        r = rounder(dt)
        for rows in (1600, 25600):  # T * B at T = 100, B = 16 / 256
            dG = rng.standard_normal((rows, 64)) * 0.1
            h = np.tanh(rng.standard_normal((rows, 64)))
            truth = dG.T @ h
            dGr = r(dG)
            hi = r(h)
            lo = r(h - hi)
            err = lambda v: np.linalg.norm(v - truth) / np.linalg.norm(truth)
            print(f"{dt:8s} rows {rows:5d}: two GEMMs {err(r(r(dGr.T @ hi) + dGr.T @ lo)):.3e}  "
                  f"hi only {err(r(dGr.T @ hi)):.3e}  one round {err(r(dGr.T @ (hi + lo))):.3e}  "
                  f"(exact product rounded once {err(r(truth)):.3e})")


if __name__ == "__main__":
    main()
