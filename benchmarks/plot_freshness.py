#!/usr/bin/env python3
"""Plots benchmarks/freshness.py's results: per tenth of the run, the median lookup latency and the most files a
lookup read, against the table's size in files, one line per sink.

Usage: .venv/bin/python benchmarks/plot_freshness.py [benchmarks/results/freshness.json] [docs/img/freshness.png]
"""
from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    src = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/freshness.json"
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/img/freshness.png"
    with open(src) as f:
        data = json.load(f)
    fig, (lat, files) = plt.subplots(1, 2, figsize=(11, 4))
    for r in data["results"]:
        x = [d["files_total_median"] for d in r["deciles"]]
        lat.plot(x, [d["p50_s"] * 1000 for d in r["deciles"]], marker="o", label=f"{r['sink']} sink")
        line, = files.plot(x, [d["files_read_max"] for d in r["deciles"]], marker="o",
                           label=f"{r['sink']} sink: files read")
        if all("files_uncovered_max" in d for d in r["deciles"]):
            files.plot(x, [d["files_uncovered_max"] for d in r["deciles"]], marker="x", linestyle="--",
                       color=line.get_color(), label=f"{r['sink']} sink: of them not yet covered")
    lat.set(xlabel="files in the table (median over the tenth of the run)", ylabel="p50 lookup latency (ms)",
            title="Lookup latency while the stream writes")
    files.set(xlabel="files in the table (median over the tenth of the run)", ylabel="files read (max)",
              title="Files a lookup read (goal <= 2)", ylim=(0, None))
    files.axhline(2, color="grey", linestyle="--", linewidth=1)
    lat.set_yscale("log")  # log-log: a latency that grows with the table shows as a slope
    lat.set_ylim(10, 2000)
    for ax in (lat, files):
        ax.set_xscale("log")
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle(f"{data['command']}\n{data['machine']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
