#!/usr/bin/env python3
"""Turns openrnn-bench CSV output into the Markdown table of docs/performance.md.

usage: perf_table.py FILE.csv [--algo ALGO] [--comparator-algo best|NAME] [--wide]

One table row per problem: openrnn's time, the comparator's (its best algorithm when it ran several, else its only
one, or NAME), the ratio (comparator / openrnn; > 1 means openrnn is faster) and the relative difference of the
outputs; then the geometric mean of the ratio over the rows that have one. Lines starting with '#' (the bench's
configuration) are copied above the table as a code block. --wide (cuDNN runs): one compact row per problem with
the comparator's STANDARD algorithm and its best side by side, and both ratios.
"""
import argparse
import csv
import math
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--algo", default=None, help="openrnn algo column to keep (default: every one)")
    ap.add_argument("--comparator-algo", default="best")
    ap.add_argument("--wide", action="store_true")
    ap.add_argument("--compact", action="store_true", help="cell, mode, B, H, times, ratio, difference only")
    args = ap.parse_args()

    comments, lines = [], []
    with open(args.csv) as f:
        for line in f:
            (comments if line.startswith("#") else lines).append(line.rstrip("\n"))
    rows = list(csv.DictReader(lines))
    # Which comparator rows to show: per (problem, openrnn algo), 'best:*' if present, else the only one.
    groups = {}
    for r in rows:
        if args.algo and r["algo"] != args.algo:
            continue
        key = tuple(r[k] for k in ("cell", "dtype", "mode", "B", "H", "I", "T", "layers", "dirs", "algo"))
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in groups.items():
        if args.comparator_algo == "best":
            pick = [r for r in rs if r["comparator_algo"].startswith("best:")] or rs[:1]
        else:
            pick = [r for r in rs if r["comparator_algo"] == args.comparator_algo] or rs[:1]
        out.append(pick[0])

    if args.wide:
        return wide(comments, groups)
    print("```")
    for c in comments:
        print(c)
    print("```")
    print()
    comp = out[0]["comparator"] if out else "comparator"
    if args.compact:
        return compact(out, comp)
    print(f"| cell | dtype | mode | B | H | I | T | L | D | openrnn algo | openrnn µs/step | {comp} algo | "
          f"{comp} µs/step | ratio | max rel diff | status |")
    print("|" + "---|" * 16)
    logs = []
    for r in out:
        ratio = r["ratio"]
        if ratio not in ("NA", ""):
            logs.append(math.log(float(ratio)))
        print("| " + " | ".join([r["cell"], r["dtype"], r["mode"], r["B"], r["H"], r["I"], r["T"], r["layers"],
                                  r["dirs"], r["algo"], r["us_per_step"], r["comparator_algo"],
                                  r["comparator_us_per_step"], ratio, r["max_rel_diff"],
                                  r["status"].replace("|", "/")]) + " |")
    if logs:
        print()
        print(f"Geometric mean of the ratio over {len(logs)} rows: **{math.exp(sum(logs) / len(logs)):.3f}**")
    return 0


def compact(out, comp):
    print(f"| cell | mode | B | H | openrnn µs/step | {comp} µs/step | ratio | max rel diff |")
    print("|" + "---|" * 8)
    logs = []
    for r in out:
        if r["ratio"] not in ("NA", ""):
            logs.append(math.log(float(r["ratio"])))
        ratio = r["ratio"] if r["status"] == "ok" else f"{r['ratio']} ({r['status']})"
        print("| " + " | ".join([r["cell"], r["mode"], r["B"], r["H"], r["us_per_step"],
                                  r["comparator_us_per_step"], ratio, r["max_rel_diff"]]) + " |")
    if logs:
        print()
        print(f"Geometric mean of the ratio over {len(logs)} rows: **{math.exp(sum(logs) / len(logs)):.3f}**")
    return 0


def wide(comments, groups):
    print("```")
    for c in comments:
        print(c)
    print("```")
    print()
    print("| cell | dtype | mode | B | H | openrnn algo | openrnn µs/step | cuDNN standard | cuDNN best (algo) | "
          "vs standard | vs best |")
    print("|" + "---|" * 11)
    logs_std, logs_best = [], []
    for key, rs in groups.items():
        r0 = rs[0]
        std = next((r for r in rs if r["comparator_algo"] == "standard"), None)
        best = next((r for r in rs if r["comparator_algo"].startswith("best:")), None)
        ours = r0["us_per_step"]

        def ratio(r, logs):
            if r is None or r["ratio"] in ("NA", ""):
                return "NA"
            logs.append(math.log(float(r["ratio"])))
            return r["ratio"]

        std_us = std["comparator_us_per_step"] if std else "NA"
        best_txt = f"{best['comparator_us_per_step']} ({best['comparator_algo'][5:]})" if best else "NA"
        print("| " + " | ".join([r0["cell"], r0["dtype"], r0["mode"], r0["B"], r0["H"], r0["algo"], ours, std_us,
                                  best_txt, ratio(std, logs_std), ratio(best, logs_best)]) + " |")
    print()
    for name, logs in (("cuDNN STANDARD", logs_std), ("cuDNN's best algorithm", logs_best)):
        if logs:
            print(f"Geometric mean of the ratio against {name} over {len(logs)} rows: "
                  f"**{math.exp(sum(logs) / len(logs)):.3f}**")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
