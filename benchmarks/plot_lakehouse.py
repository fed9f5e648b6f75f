#!/usr/bin/env python3
"""Log-log plots of benchmarks/lakehouse.py runs at several table sizes (files read and lookup time vs files).

Usage: .venv/bin/python benchmarks/plot_lakehouse.py results/lakehouse-spark4.0.json results/lakehouse-2000-spark4.0.json \
           results/lakehouse-10000-spark4.0.json --out docs/img/lakehouse-scale.png
"""
from __future__ import annotations

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="JSON files written by benchmarks/lakehouse.py --out")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    runs = sorted((json.load(open(f)) for f in args.runs), key=lambda r: r["files"])
    sizes = [r["files"] for r in runs]
    fig, (ax_files, ax_time) = plt.subplots(1, 2, figsize=(11, 4.2))
    for source, colour in (("delta", "tab:blue"), ("iceberg", "tab:orange"), ("v2-parquet", "tab:green")):
        def series(keys: str, field: str):
            return [next(x[field] for x in r["results"] if x["source"] == source and x["keys"] == keys) for r in runs]
        present_read = series("present", "files_read_mean")
        ax_files.plot(sizes, series("present", "files_after_format_statistics_mean"), ":", color=colour,
                      label=f"{source}: after the format's min/max")
        ax_files.plot(sizes, present_read, "o-", color=colour, label=f"{source}: read with the index")
        ax_time.plot(sizes, series("present", "median_s_index_off"), "s--", color=colour, label=f"{source}: index off")
        ax_time.plot(sizes, series("present", "median_s_index_on"), "o-", color=colour, label=f"{source}: index on")
        if all("median_ms_sparkbloom_probe" in x for r in runs for x in r["results"]):
            probe_s = [ms / 1000 for ms in series("present", "median_ms_sparkbloom_probe")]
            ax_time.plot(sizes, probe_s, "^:", color=colour, label=f"{source}: of which sparkbloom's probe")
    for ax in (ax_files, ax_time):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("files in the table (100 rows each)")
        ax.grid(True, which="both", alpha=0.3)
    ax_files.set_ylabel("files read, present key (mean)")
    ax_files.set_title("Files read per point lookup")
    ax_time.set_ylabel("median seconds per lookup")
    ax_time.set_title(f"Lookup time, Spark {runs[0]['spark']}, {runs[0]['cores']} cores")
    ax_files.legend(fontsize=7)
    ax_time.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
